package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/rigor-bench/rigor/steps"
	"github.com/spf13/cobra"
)

func newSimCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sim", Short: "The built-in OpenAI-compatible serving simulator"}
	var o steps.SimOptions
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve a simulator profile until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.TimeScale <= 0 {
				return &exitError{code: 2, msg: "--time-scale must be greater than 0"}
			}
			if o.AllocateMB < 0 || o.AllocateAfter < 0 {
				return &exitError{code: 2, msg: "--allocate-mb and --allocate-after must not be negative"}
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
	serve.Flags().IntVar(&o.AllocateMB, "allocate-mb", 0, "allocate and touch this many MiB (after --allocate-after) and hold them: makes a memory-limited container OOM")
	serve.Flags().DurationVar(&o.AllocateAfter, "allocate-after", 0, "delay before --allocate-mb takes effect")
	cmd.AddCommand(serve)
	return cmd
}
