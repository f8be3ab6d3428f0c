package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/signal"
	"syscall"

	"github.com/rigor-bench/rigor/steps"
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newAgentCmd) }

func newAgentCmd(g *globals) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "agent --listen HOST:PORT",
		Short: "Send load for a campaign's blocks from this host",
		Long: `Serves as a load agent until interrupted. A block (or matrix) that names this
agent, agents = ["tcp://HOST:PORT", ...], connects to it, measures its clock,
hands it a slice of the block (a share of the concurrency and of the request
indices, or of the open loop's arrival times) and one start time; the agent sends
its requests with the block step's own client and streams every request record
back as it finishes. The block step merges the records of all its agents into one
requests.jsonl.

The connection is neither authenticated nor encrypted, and a block's job carries
the target's API key: listen on a network the campaign trusts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				if errors.Is(err, syscall.EADDRINUSE) {
					return &exitError{code: 1, msg: fmt.Sprintf("listen on %s: the port is in use (another rigor agent?); choose another with --listen", listen)}
				}
				return &exitError{code: 1, msg: fmt.Sprintf("listen on %s: %v", listen, err)}
			}
			fmt.Fprintf(g.stdout, "rigor agent listening on tcp://%s\n", ln.Addr())
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			srv := steps.AgentServer{Logf: func(format string, args ...any) { g.log.Info().Msg(fmt.Sprintf(format, args...)) }}
			return srv.Serve(ctx, ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address to serve on, HOST:PORT (0.0.0.0:PORT in a container)")
	_ = cmd.MarkFlagRequired("listen")
	return cmd
}
