package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/rigor-bench/rigor/steps"
	"github.com/spf13/cobra"
)

// newSimDCGMCmd serves simulated GPUs in dcgm-exporter's format, so hosts with
// gpus = "dcgm" (their GPUs on another node) run end to end without a GPU.
func newSimDCGMCmd(g *globals) *cobra.Command {
	var c steps.SimDCGMConfig
	var listen string
	cmd := &cobra.Command{
		Use:   "dcgm",
		Short: "Serve simulated GPUs at /metrics as NVIDIA's dcgm-exporter does, until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("drift-watts") != cmd.Flags().Changed("drift-at") {
				return &exitError{code: 2, msg: "--drift-at and --drift-watts go together: the limit changes to --drift-watts that long after start"}
			}
			if cmd.Flags().Changed("drift-at") && c.DriftAt <= 0 {
				return &exitError{code: 2, msg: fmt.Sprintf("--drift-at %s: want a time after start (the limit changes that long after it)", c.DriftAt)}
			}
			c.Names = &steps.SimNames{Devices: "--gpus", PowerLimitW: "--power-limit-watts", DriftAt: "--drift-at", DriftW: "--drift-watts"}
			h, err := steps.SimDCGMHandler(c)
			if err != nil {
				return &exitError{code: 2, msg: err.Error()}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return &exitError{code: 1, msg: fmt.Sprintf("--listen %s: %v", listen, err)}
			}
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			fmt.Fprintf(g.stdout, "serving %d simulated GPUs (%g W limit) as dcgm-exporter at http://%s/metrics\n", c.Devices, c.PowerLimitW, ln.Addr())
			ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer cancel()
			select {
			case <-ctx.Done():
			case err := <-done:
				if !errors.Is(err, http.ErrServerClosed) {
					return &exitError{code: 1, msg: err.Error()}
				}
			}
			sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer scancel()
			return srv.Shutdown(sctx)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:9400", "address to listen on (dcgm-exporter's port is 9400)")
	cmd.Flags().StringVar(&c.Host, "node", "sim-node", "the simulated node's name: the Hostname label, and the seed of its GPUs' UUIDs")
	cmd.Flags().IntVar(&c.Devices, "gpus", 2, "simulated GPUs")
	cmd.Flags().Float64Var(&c.PowerLimitW, "power-limit-watts", 300, "power limit of every simulated GPU")
	cmd.Flags().DurationVar(&c.DriftAt, "drift-at", 0, "change every limit to --drift-watts this long after start (a limit changed mid-campaign)")
	cmd.Flags().Float64Var(&c.DriftW, "drift-watts", 0, "the limit after --drift-at")
	return cmd
}
