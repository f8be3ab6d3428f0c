package gpu

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// DCGM field names as NVIDIA's dcgm-exporter exposes them (its counters CSV names
// the field; the exporter uses the field name as the metric name). Units are the
// exporter's: watts, degrees Celsius, MHz, MiB.
const (
	DCGMPowerUsage     = "DCGM_FI_DEV_POWER_USAGE"
	DCGMPowerMgmtLimit = "DCGM_FI_DEV_POWER_MGMT_LIMIT"
	DCGMEnforcedLimit  = "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"
	DCGMGPUTemp        = "DCGM_FI_DEV_GPU_TEMP"
	DCGMSMClock        = "DCGM_FI_DEV_SM_CLOCK"
	DCGMMemClock       = "DCGM_FI_DEV_MEM_CLOCK"
	// DCGM renamed the throttle reasons "clock event reasons" (DCGM 3.3); the
	// exporter serves whichever name its DCGM has, with NVML's bits.
	DCGMClockEventReasons = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
	DCGMThrottleReasons   = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
	DCGMFBUsed            = "DCGM_FI_DEV_FB_USED"
	DCGMFBFree            = "DCGM_FI_DEV_FB_FREE"
	// The driver version is a label field: the exporter adds it as a label of every
	// metric when its counters CSV lists it as "label".
	DCGMDriverLabel = "DCGM_FI_DRIVER_VERSION"
)

// dcgmRequired are the fields without which a snapshot means nothing: which GPU it
// is and what it draws against which limit. The power-limit fields are not in the
// exporter's default counters, so their absence is named with the fix.
var dcgmRequired = []string{DCGMPowerUsage, DCGMPowerMgmtLimit}

// DCGM reads the GPUs of a node from a dcgm-exporter's Prometheus endpoint: the
// source for hosts whose GPUs NVML cannot see from here (a Kubernetes node, a
// remote Docker Engine).
type DCGM struct {
	URL     string
	Timeout time.Duration // per scrape; DefaultDCGMTimeout when zero
	Client  *http.Client
}

// DefaultDCGMTimeout bounds one scrape; a sampler at 1 s must not queue scrapes.
const DefaultDCGMTimeout = 2 * time.Second

// ParseDCGMURL checks an exporter URL as written in a plan: http or https with a
// host. A bare host:port gets the exporter's /metrics path stated in the error.
func ParseDCGMURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("dcgm_endpoint = %q: want the exporter's metrics URL, such as \"http://10.0.0.5:9400/metrics\"", raw)
	}
	return u.String(), nil
}

// Kind names the source.
func (DCGM) Kind() string { return "dcgm" }

// Snapshot scrapes the exporter once and returns every GPU it reports, in index
// order.
func (d DCGM) Snapshot() ([]Device, error) {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultDCGMTimeout
	}
	client := d.Client
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("DCGM exporter %s: %w", d.URL, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("DCGM exporter %s unreachable: %w", d.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("DCGM exporter %s answered %s: %s", d.URL, resp.Status, strings.TrimSpace(string(b)))
	}
	devs, err := ParseDCGM(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("DCGM exporter %s: %w", d.URL, err)
	}
	return devs, nil
}

// ParseDCGM reads dcgm-exporter text: one device per "gpu" label, identified by
// its UUID label.
func ParseDCGM(r io.Reader) ([]Device, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("not Prometheus text: %w", err)
	}
	for _, name := range dcgmRequired {
		if _, ok := families[name]; !ok {
			return nil, fmt.Errorf("no %s metric: add it to the exporter's counters CSV (dcgm-exporter -f), since rigor's power gate and drift check need it", name)
		}
	}
	byGPU := map[int]*Device{}
	seen := map[int]map[string]bool{}
	dev := func(m *dto.Metric) (*Device, error) {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		idx, err := strconv.Atoi(labels["gpu"])
		if err != nil || idx < 0 {
			return nil, fmt.Errorf("a metric without a GPU index label (gpu=%q)", labels["gpu"])
		}
		d := byGPU[idx]
		if d == nil {
			d = &Device{Index: idx}
			byGPU[idx] = d
			seen[idx] = map[string]bool{}
		}
		if u := labels["UUID"]; u != "" {
			if d.UUID != "" && d.UUID != u {
				return nil, fmt.Errorf("gpu %d reported with two UUIDs (%s, %s)", idx, d.UUID, u)
			}
			d.UUID = u
		}
		if n := labels["modelName"]; n != "" {
			d.Name = n
		}
		if v := labels[DCGMDriverLabel]; v != "" {
			d.Driver = v
		}
		return d, nil
	}
	names := make([]string, 0, len(families))
	for name := range families {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, m := range families[name].GetMetric() {
			d, err := dev(m)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			v := metricValue(m)
			seen[d.Index][name] = true
			switch name {
			case DCGMPowerUsage:
				d.PowerW = v
			case DCGMPowerMgmtLimit:
				d.PowerLimitW = v
			case DCGMEnforcedLimit:
				d.EnforcedPowerLimitW = v
			case DCGMGPUTemp:
				d.TemperatureC = v
			case DCGMSMClock:
				d.SMClockMHz = int(math.Round(v))
			case DCGMMemClock:
				d.MemClockMHz = int(math.Round(v))
			case DCGMClockEventReasons, DCGMThrottleReasons:
				d.ThrottleReasons = uint64(v)
				d.ThrottleNames = ThrottleNames(d.ThrottleReasons)
			case DCGMFBUsed:
				d.MemoryUsedBytes = uint64(v) << 20
			case DCGMFBFree:
				d.MemoryFreeBytes = uint64(v) << 20
			}
		}
	}
	if len(byGPU) == 0 {
		return nil, fmt.Errorf("%s has no samples: the exporter sees no GPU", DCGMPowerUsage)
	}
	out := make([]Device, 0, len(byGPU))
	for idx, d := range byGPU {
		s := seen[idx]
		for _, name := range dcgmRequired {
			if !s[name] {
				return nil, fmt.Errorf("gpu %d has no %s sample", idx, name)
			}
		}
		if d.UUID == "" {
			return nil, fmt.Errorf("gpu %d has no UUID label, so rigor cannot tell it from another device", idx)
		}
		if !s[DCGMEnforcedLimit] {
			// The enforced limit equals the management limit unless something
			// else (a thermal or board bound) lowers it; without the field the
			// management limit is all there is to compare.
			d.EnforcedPowerLimitW = d.PowerLimitW
			d.Unsupported = append(d.Unsupported, DCGMEnforcedLimit)
		}
		for _, name := range []string{DCGMGPUTemp, DCGMSMClock, DCGMMemClock, DCGMFBUsed, DCGMFBFree} {
			if !s[name] {
				d.Unsupported = append(d.Unsupported, name)
			}
		}
		if !s[DCGMClockEventReasons] && !s[DCGMThrottleReasons] {
			d.Unsupported = append(d.Unsupported, DCGMClockEventReasons)
		}
		d.MemoryTotalBytes = d.MemoryUsedBytes + d.MemoryFreeBytes
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return math.NaN()
}

// WriteDCGM writes devices as dcgm-exporter does (gauge families with its label
// set), so the simulator can stand in for an exporter on a node without GPUs.
func WriteDCGM(w io.Writer, hostname string, devs []Device) error {
	type field struct {
		name, help string
		value      func(Device) float64
	}
	fields := []field{
		{DCGMSMClock, "SM clock frequency (in MHz).", func(d Device) float64 { return float64(d.SMClockMHz) }},
		{DCGMMemClock, "Memory clock frequency (in MHz).", func(d Device) float64 { return float64(d.MemClockMHz) }},
		{DCGMGPUTemp, "GPU temperature (in C).", func(d Device) float64 { return d.TemperatureC }},
		{DCGMPowerUsage, "Power draw (in W).", func(d Device) float64 { return d.PowerW }},
		{DCGMPowerMgmtLimit, "Power management limit (in W).", func(d Device) float64 { return d.PowerLimitW }},
		{DCGMEnforcedLimit, "Enforced power limit (in W).", func(d Device) float64 { return d.EnforcedPowerLimitW }},
		{DCGMClockEventReasons, "Current clock event reasons (bitmask).", func(d Device) float64 { return float64(d.ThrottleReasons) }},
		{DCGMFBFree, "Framebuffer memory free (in MiB).", func(d Device) float64 { return float64(d.MemoryFreeBytes >> 20) }},
		{DCGMFBUsed, "Framebuffer memory used (in MiB).", func(d Device) float64 { return float64(d.MemoryUsedBytes >> 20) }},
	}
	var b strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", f.name, f.help, f.name)
		for _, d := range devs {
			fmt.Fprintf(&b, "%s{gpu=%q,UUID=%q,pci_bus_id=%q,device=%q,modelName=%q,Hostname=%q,%s=%q} %s\n",
				f.name, strconv.Itoa(d.Index), d.UUID, fmt.Sprintf("00000000:%02X:00.0", 0x18+d.Index),
				fmt.Sprintf("nvidia%d", d.Index), d.Name, hostname, DCGMDriverLabel, d.Driver,
				strconv.FormatFloat(f.value(d), 'g', -1, 64))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
