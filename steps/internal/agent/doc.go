// Package agent runs one block from several client hosts: `rigor agent` processes
// (Server) each run a slice of the block with the block step's own client
// (loadgen.Run, given a loadgen.Slice and a start instant), and the block step
// (Fleet) stays the one timing authority.
//
// Protocol: one TCP connection per agent and block, one JSON object per line in
// each direction (message.go). The agent greets with its protocol version and CPU
// count; the authority measures the agent's clock (clockSamples NTP-style
// exchanges; the one with the shortest round trip gives the offset, and half its
// round trip minus the agent's turnaround bounds the offset's error), sends the job
// (the block's loadgen.Config, the slice and the API key), waits until every agent
// has rendered its prompts and dialled its connections (the start barrier), then
// sends each agent the one block start, T0 on the authority's wall clock
// translated into the agent's clock with its offset. Each agent's block clock
// starts at that instant, so its record offsets are offsets from T0: the records of
// every agent merge into one requests.jsonl in exactly one client's format, and
// every figure, gate and statistic reads it unchanged. Records stream back as each
// request finishes; a heartbeat every beatEvery says the agent is alive while
// nothing finishes.
//
// Partition (loadgen.Slice): agent k of N sends the requests whose index i has
// i mod N == k over its share of the concurrency (an even split; the first
// concurrency mod N agents take one more connection). In an open loop the block's
// one arrival schedule is computed by every agent and each sends its own arrival
// times, so the merged schedule is exactly one client's.
//
// Failures (Failure, wrapping ErrAgent): an agent that cannot be reached, whose
// clock bound exceeds Limits.MaxClockBound, that falls silent for Limits.Silence or
// drops its connection mid-block or stops its slice because it is shutting down
// (SIGTERM; the others are cancelled), that used more than
// Limits.MaxCPUShare of its CPUs over the block clock (saturated), or whose p99
// schedule lag exceeds Limits.MaxScheduleLag. Every record received is kept; the
// requests of a lost agent that sent no record get a cancelled record naming the
// agent, so the outcome table still sums to the planned requests.
//
// Out of scope: authentication and encryption of the agent connection (run agents
// on a network the campaign trusts; the job carries the target's API key), prompt
// sources other than the workload's corpus (a Source is a local file), and a
// dispatch window (Config.Duration) across agents.
package agent
