package gpu

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What dcgm-exporter 3.3 serves with its default counters plus the two power-limit
// fields rigor needs (the format of its /metrics, labels as it writes them).
const exporterText = `# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-5e2b1c3a-0000-1111-2222-333344445555",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 1980
DCGM_FI_DEV_SM_CLOCK{gpu="1",UUID="GPU-9a7d0e1f-6666-7777-8888-999900001111",pci_bus_id="00000000:2A:00.0",device="nvidia1",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 1755
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-5e2b1c3a-0000-1111-2222-333344445555",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 41
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-9a7d0e1f-6666-7777-8888-999900001111",pci_bus_id="00000000:2A:00.0",device="nvidia1",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 63
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-5e2b1c3a-0000-1111-2222-333344445555",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 118.5
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-9a7d0e1f-6666-7777-8888-999900001111",pci_bus_id="00000000:2A:00.0",device="nvidia1",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 689.25
# HELP DCGM_FI_DEV_POWER_MGMT_LIMIT Power management limit (in W).
# TYPE DCGM_FI_DEV_POWER_MGMT_LIMIT gauge
DCGM_FI_DEV_POWER_MGMT_LIMIT{gpu="0",UUID="GPU-5e2b1c3a-0000-1111-2222-333344445555",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 700
DCGM_FI_DEV_POWER_MGMT_LIMIT{gpu="1",UUID="GPU-9a7d0e1f-6666-7777-8888-999900001111",pci_bus_id="00000000:2A:00.0",device="nvidia1",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 700
# HELP DCGM_FI_DEV_CLOCK_THROTTLE_REASONS Current clock throttle reasons.
# TYPE DCGM_FI_DEV_CLOCK_THROTTLE_REASONS gauge
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="0",UUID="GPU-5e2b1c3a-0000-1111-2222-333344445555",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 1
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="1",UUID="GPU-9a7d0e1f-6666-7777-8888-999900001111",pci_bus_id="00000000:2A:00.0",device="nvidia1",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 4
# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-5e2b1c3a-0000-1111-2222-333344445555",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 143000
DCGM_FI_DEV_FB_FREE{gpu="1",UUID="GPU-9a7d0e1f-6666-7777-8888-999900001111",pci_bus_id="00000000:2A:00.0",device="nvidia1",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 1000
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-5e2b1c3a-0000-1111-2222-333344445555",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 0
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-9a7d0e1f-6666-7777-8888-999900001111",pci_bus_id="00000000:2A:00.0",device="nvidia1",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.90.07"} 142000
`

func TestParseDCGMExporterText(t *testing.T) {
	devs, err := ParseDCGM(strings.NewReader(exporterText))
	if err != nil {
		t.Fatal(err)
	}
	want := []Device{{
		Index: 0, UUID: "GPU-5e2b1c3a-0000-1111-2222-333344445555", Name: "NVIDIA H200", Driver: "550.90.07",
		PowerLimitW: 700, EnforcedPowerLimitW: 700, PowerW: 118.5, TemperatureC: 41, SMClockMHz: 1980,
		ThrottleReasons: 1, ThrottleNames: []string{"gpu_idle"},
		MemoryTotalBytes: 143000 << 20, MemoryFreeBytes: 143000 << 20,
		Unsupported: []string{DCGMEnforcedLimit, DCGMMemClock},
	}, {
		Index: 1, UUID: "GPU-9a7d0e1f-6666-7777-8888-999900001111", Name: "NVIDIA H200", Driver: "550.90.07",
		PowerLimitW: 700, EnforcedPowerLimitW: 700, PowerW: 689.25, TemperatureC: 63, SMClockMHz: 1755,
		ThrottleReasons: 4, ThrottleNames: []string{"sw_power_cap"},
		MemoryTotalBytes: 143000 << 20, MemoryUsedBytes: 142000 << 20, MemoryFreeBytes: 1000 << 20,
		Unsupported: []string{DCGMEnforcedLimit, DCGMMemClock},
	}}
	if d := cmp.Diff(want, devs); d != "" {
		t.Fatalf("devices (-want +got):\n%s", d)
	}
}

// What the simulator serves is what a DCGM source reads back, over a real socket.
func TestSimExporterRoundTrip(t *testing.T) {
	s, err := SimFor("dcgm-roundtrip", SimConfig{Devices: 3, PowerLimitW: 450})
	if err != nil {
		t.Fatal(err)
	}
	var served []Device
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served, _ = s.Snapshot()
		_ = WriteDCGM(w, "node", served)
	}))
	defer srv.Close()
	got, err := DCGM{URL: srv.URL}.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for i := range served {
		// Memory travels in MiB, as the exporter sends it.
		served[i].MemoryUsedBytes = served[i].MemoryUsedBytes >> 20 << 20
		served[i].MemoryFreeBytes = served[i].MemoryFreeBytes >> 20 << 20
		served[i].MemoryTotalBytes = served[i].MemoryUsedBytes + served[i].MemoryFreeBytes
	}
	if d := cmp.Diff(served, got); d != "" {
		t.Fatalf("read back (-served +read):\n%s", d)
	}
}

func TestDCGMErrorsNameTheProblem(t *testing.T) {
	drop := func(field string) string {
		var keep []string
		for _, l := range strings.Split(exporterText, "\n") {
			if !strings.Contains(l, field) {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	cases := []struct{ name, text, want string }{
		{"no limit field", drop(DCGMPowerMgmtLimit), "no DCGM_FI_DEV_POWER_MGMT_LIMIT metric: add it to the exporter's counters CSV"},
		{"no power field", drop(DCGMPowerUsage), "no DCGM_FI_DEV_POWER_USAGE metric"},
		{"no uuid", strings.ReplaceAll(exporterText, `UUID="GPU-9a7d0e1f-6666-7777-8888-999900001111",`, ""), "gpu 1 has no UUID label"},
		{"no gpu label", strings.ReplaceAll(exporterText, `gpu="1",`, ""), `without a GPU index label`},
		{"not prometheus", "<html>hello</html>", "not Prometheus text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseDCGM(strings.NewReader(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "dcgm not ready", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	if _, err := (DCGM{URL: srv.URL + "/metrics"}).Snapshot(); err == nil || !strings.Contains(err.Error(), srv.URL+"/metrics answered 503") || !strings.Contains(err.Error(), "dcgm not ready") {
		t.Fatalf("a 503 should name the URL, status and body: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + l.Addr().String() + "/metrics"
	l.Close()
	if _, err := (DCGM{URL: addr}).Snapshot(); err == nil || !strings.Contains(err.Error(), "DCGM exporter "+addr+" unreachable") {
		t.Fatalf("an unreachable exporter should be named: %v", err)
	}
	for _, bad := range []string{"10.0.0.5:9400", "ftp://x/metrics", "http://"} {
		if _, err := ParseDCGMURL(bad); err == nil || !strings.Contains(err.Error(), "want the exporter's metrics URL") {
			t.Errorf("ParseDCGMURL(%q) = %v", bad, err)
		}
	}
}
