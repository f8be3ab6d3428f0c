package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/rigor-bench/rigor/steps"
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newAgentCmd) }

func newAgentCmd(g *globals) *cobra.Command {
	var listen, offsetEnv string
	cmd := &cobra.Command{
		Use:   "agent --listen HOST:PORT [--port-offset-env NAME]",
		Short: "Send load for a campaign's blocks from this host",
		Long: `Serves as a load agent until interrupted. A block (or matrix) that names this
agent, agents = ["tcp://HOST:PORT", ...], connects to it, measures its clock,
hands it a slice of the block (a share of the concurrency and of the request
indices, or of the open loop's arrival times) and one start time; the agent sends
its requests with the block step's own client and streams every request record
back as it finishes. The block step merges the records of all its agents into one
requests.jsonl.

As pods of a Kubernetes Indexed Job on the node's network, several agents share
one address: --port-offset-env JOB_COMPLETION_INDEX adds the pod's completion
index to the port, so pod k listens on PORT+k, and the block that lists those
addresses in index order gives pod k shard k.

The connection is neither authenticated nor encrypted, and a block's job carries
the target's API key: listen on a network the campaign trusts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if listen == "" {
				return &exitError{code: exitUsage, msg: "--listen is required: the HOST:PORT this agent serves on"}
			}
			if offsetEnv != "" {
				var err error
				if listen, err = offsetListen(listen, offsetEnv, os.Getenv(offsetEnv)); err != nil {
					return &exitError{code: 1, msg: err.Error()}
				}
			}
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
	cmd.Flags().StringVar(&offsetEnv, "port-offset-env", "", "environment variable whose whole number is added to the --listen port (JOB_COMPLETION_INDEX in an Indexed Job)")
	return cmd
}

// offsetListen adds the whole number in the environment variable name (value) to
// the port of listen.
func offsetListen(listen, name, value string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("--listen %q: %v", listen, err)
	}
	base, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("--listen %q: the port must be a number to add --port-offset-env to", listen)
	}
	if value == "" {
		return "", fmt.Errorf("--port-offset-env %s: the variable is not set (an Indexed Job sets JOB_COMPLETION_INDEX in each pod)", name)
	}
	off, err := strconv.Atoi(value)
	if err != nil || off < 0 || base+off > 65535 {
		return "", fmt.Errorf("--port-offset-env %s=%q: want a whole number from 0 to %d", name, value, 65535-base)
	}
	return net.JoinHostPort(host, strconv.Itoa(base+off)), nil
}
