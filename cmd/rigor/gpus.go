package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/rigor-bench/rigor/steps"
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newGPUsCmd) }

// gpusArgs are the parsed arguments of `rigor gpus`.
type gpusArgs struct {
	kind      string
	dcgm      string
	simGPUs   int
	simLimitW float64
	simHost   string
	json      bool
}

func newGPUsCmd(g *globals) *cobra.Command {
	var a gpusArgs
	cmd := &cobra.Command{
		Use:   "gpus",
		Short: "Show the GPUs a host with gpus = \"nvml\" (or \"dcgm\", \"sim\") would observe: identity, limits, power, clocks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.kind != "nvml" && a.kind != "dcgm" && a.kind != "sim" {
				return &exitError{code: 2, msg: fmt.Sprintf("--host-kind %q: want nvml, dcgm or sim", a.kind)}
			}
			if (a.kind == "dcgm") != (a.dcgm != "") {
				return &exitError{code: 2, msg: "--dcgm-endpoint goes with --host-kind dcgm, and --host-kind dcgm needs it"}
			}
			for _, name := range []string{"sim-gpus", "sim-power-limit-watts", "sim-host"} {
				if a.kind != "sim" && cmd.Flags().Changed(name) {
					return &exitError{code: 2, msg: fmt.Sprintf("--%s goes with --host-kind sim", name)}
				}
			}
			devs, err := steps.ReadGPUs(steps.GPUQuery{Kind: a.kind, DCGMEndpoint: a.dcgm, SimDevices: a.simGPUs, SimLimitW: a.simLimitW, SimHost: a.simHost,
				SimNames: &steps.SimNames{Devices: "--sim-gpus", PowerLimitW: "--sim-power-limit-watts"}})
			if err != nil {
				msg := err.Error()
				if a.kind == "nvml" {
					msg += "\n`rigor gpus --host-kind sim --sim-host NAME` shows the simulated GPUs the host NAME with gpus = \"sim\" observes"
				}
				return &exitError{code: exitError1, msg: msg}
			}
			if a.json {
				return gpusJSON(g.stdout, a.kind, devs)
			}
			return gpusTable(g.stdout, a.kind, devs)
		},
	}
	cmd.Flags().StringVar(&a.kind, "host-kind", "nvml", "where the GPUs come from: nvml (this machine), dcgm (a node's dcgm-exporter) or sim")
	cmd.Flags().StringVar(&a.dcgm, "dcgm-endpoint", "", "the dcgm-exporter metrics `URL` (with --host-kind dcgm)")
	cmd.Flags().IntVar(&a.simGPUs, "sim-gpus", 2, "simulated GPUs (with --host-kind sim)")
	cmd.Flags().Float64Var(&a.simLimitW, "sim-power-limit-watts", 300, "power limit of the simulated GPUs (with --host-kind sim)")
	cmd.Flags().StringVar(&a.simHost, "sim-host", "", "the campaign's sim host `NAME` (with --host-kind sim): its GPUs' UUIDs derive from the name, so these are the GPUs its blocks record (default: a stand-alone host)")
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON instead of a table")
	return cmd
}

func gpusJSON(w io.Writer, kind string, devs []steps.GPUDevice) error {
	b, err := json.MarshalIndent(map[string]any{"source": kind, "devices": devs}, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func gpusTable(w io.Writer, kind string, devs []steps.GPUDevice) error {
	driver := ""
	if len(devs) > 0 {
		driver = devs[0].Driver
	}
	fmt.Fprintf(w, "source %s, driver %s, %d GPU(s)\n", kind, driver, len(devs))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tUUID\tNAME\tLIMIT W\tENFORCED W\tPOWER W\tTEMP C\tSM MHz\tMEM MHz\tMEM USED/TOTAL MiB\tTHROTTLE")
	for _, d := range devs {
		throttle := "-"
		if len(d.ThrottleNames) > 0 {
			throttle = fmt.Sprint(d.ThrottleNames)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%g\t%g\t%.1f\t%g\t%d\t%d\t%d/%d\t%s\n", d.Index, d.UUID, d.Name, d.PowerLimitW, d.EnforcedPowerLimitW,
			d.PowerW, d.TemperatureC, d.SMClockMHz, d.MemClockMHz, d.MemoryUsedBytes>>20, d.MemoryTotalBytes>>20, throttle)
	}
	return tw.Flush()
}
