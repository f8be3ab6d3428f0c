package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/rigor-bench/rigor/steps"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newSimCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sim", Short: "The built-in OpenAI-compatible serving simulator and its container runtime"}
	cmd.AddCommand(newSimServeCmd(g), newSimPsCmd(g), newSimStopCmd(g), newSimDCGMCmd(g))
	return cmd
}

func newSimServeCmd(g *globals) *cobra.Command {
	var o steps.SimOptions
	var container string
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve a simulator profile until interrupted",
		Long: `Serve a simulator profile until interrupted.

With --container DIR it serves a sim runtime container (what the runtime itself
runs for every target of a host with runtime = "sim"): the profile and every
setting come from the container's directory, and the other flags must not be set.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if container != "" {
				// Every flag of serve but --container, so a flag added later is refused too.
				var set []string
				cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
					if f.Changed && f.Name != "container" {
						set = append(set, "--"+f.Name)
					}
				})
				if len(set) > 0 {
					return &exitError{code: 2, msg: fmt.Sprintf("--container takes every setting from the container; drop %s", strings.Join(set, ", "))}
				}
				if code := steps.ServeSimContainer(container); code != 0 {
					return &exitError{code: code}
				}
				return nil
			}
			if !slices.Contains(steps.SimProfiles(), o.Profile) {
				return &exitError{code: 2, msg: fmt.Sprintf("--profile %q: want one of %s", o.Profile, strings.Join(steps.SimProfiles(), ", "))}
			}
			if o.Engine != "" && !slices.Contains(steps.SimEngines(), o.Engine) {
				return &exitError{code: 2, msg: fmt.Sprintf("--engine %q: want %s", o.Engine, strings.Join(steps.SimEngines(), " or "))}
			}
			if !(o.TimeScale > 0) || math.IsInf(o.TimeScale, 0) {
				return &exitError{code: 2, msg: "--time-scale must be a finite number greater than 0"}
			}
			if o.TokensPerChunk < 0 {
				return &exitError{code: 2, msg: "--tokens-per-chunk must not be negative"}
			}
			if o.AllocateMB < 0 || o.AllocateAfter < 0 {
				return &exitError{code: 2, msg: "--allocate-mb and --allocate-after must not be negative"}
			}
			if cmd.Flags().Changed("allocate-after") && o.AllocateMB == 0 {
				return &exitError{code: 2, msg: "--allocate-after delays --allocate-mb: set both"}
			}
			url, stop, err := steps.ServeSimulator(o)
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			defer stop()
			fmt.Fprintf(g.stdout, "serving profile %s at %s (time scale %g)\n", o.Profile, url, o.TimeScale)
			ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer cancel()
			<-ctx.Done()
			return nil
		},
	}
	serve.Flags().StringVar(&o.Profile, "profile", "incumbent", fmt.Sprintf("simulator profile, one of %v", steps.SimProfiles()))
	serve.Flags().StringVar(&o.Listen, "listen", "127.0.0.1:8000", "address to listen on (0.0.0.0:PORT inside a container)")
	serve.Flags().StringVar(&o.Model, "model", "", "served model name (default: the profile's)")
	serve.Flags().StringVar(&o.ReasoningField, "reasoning-field", "", "delta field for reasoning tokens: reasoning_content (default) or reasoning")
	serve.Flags().StringVar(&o.Engine, "engine", "", "serving engine to imitate on /metrics and the cache reset endpoint: vllm (default) or sglang")
	serve.Flags().Float64Var(&o.TimeScale, "time-scale", 1, "multiply every modelled delay (0.01 = 100x faster)")
	serve.Flags().Uint64Var(&o.Seed, "seed", 0, "seed of the per-request random choices")
	serve.Flags().IntVar(&o.TokensPerChunk, "tokens-per-chunk", 1, "most tokens one stream chunk carries, as speculative decoding and stream batching send them")
	serve.Flags().IntVar(&o.AllocateMB, "allocate-mb", 0, "allocate and touch this many MiB (after --allocate-after) and hold them: makes a memory-limited container OOM")
	serve.Flags().DurationVar(&o.AllocateAfter, "allocate-after", 0, "delay before --allocate-mb takes effect")
	serve.Flags().StringVar(&container, "container", "", "serve the sim runtime container whose state directory is `DIR`")
	return serve
}

func dirHelp() string {
	return fmt.Sprintf("a host's state directory (a plan's sim_dir), or a directory of hosts (default %s)", steps.SimRoot())
}

func newSimPsCmd(g *globals) *cobra.Command {
	var dir string
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the simulator containers a campaign left running (with --all, the stopped ones too)",
		Long: `List the simulator containers of the sim runtime.

A target on a host with runtime = "sim" runs as a server process of its own, like a
container: it outlives the apply that started it (so a resumed campaign finds it
again) and keeps running after the campaign, as a restored incumbent does. This
lists them; rigor sim stop stops them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := steps.SimContainers(dir)
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			shown := list[:0:0]
			for _, c := range list {
				if all || c.Status == "running" {
					shown = append(shown, c)
				}
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(shown)
			}
			if len(shown) == 0 {
				what := "running "
				if all {
					what = ""
				}
				fmt.Fprintf(g.stdout, "no %ssimulator containers under %s\n", what, orDefault(dir, steps.SimRoot()))
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "HOST\tCONTAINER\tIMAGE\tSTATUS\tPID\tENDPOINT\tSTARTED")
			for _, c := range shown {
				started := "-"
				if !c.StartedAt.IsZero() {
					started = c.StartedAt.Local().Format(time.DateTime)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", c.Host, c.Name, c.Image, statusText(c), c.PID, c.Endpoint, started)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", dirHelp())
	cmd.Flags().BoolVarP(&all, "all", "a", false, "list stopped containers too")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func statusText(c steps.SimContainer) string {
	switch {
	case c.Status != "exited":
		return c.Status
	case c.OOMKilled:
		return fmt.Sprintf("exited (%d, OOM-killed)", c.ExitCode)
	case c.ExitCode < 0:
		return "exited (code unknown)"
	}
	return fmt.Sprintf("exited (%d)", c.ExitCode)
}

func newSimStopCmd(g *globals) *cobra.Command {
	var dir string
	var all bool
	cmd := &cobra.Command{
		Use:   "stop [CONTAINER...]",
		Short: "Stop simulator containers (SIGTERM, then SIGKILL after 10 s); --all stops every running one",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return &exitError{code: 2, msg: "name the containers to stop, or pass --all (see `rigor sim ps`)"}
			}
			stopped, err := steps.StopSimContainers(dir, args)
			for _, c := range stopped {
				fmt.Fprintf(g.stdout, "stopped %s/%s (pid %d, %s)\n", c.Host, c.Name, c.PID, c.Endpoint)
			}
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			if len(stopped) == 0 {
				fmt.Fprintln(g.stdout, "nothing was running")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", dirHelp())
	cmd.Flags().BoolVar(&all, "all", false, "stop every running container")
	return cmd
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
