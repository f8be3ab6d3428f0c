//go:build reportcheck

package report

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestReportRendersInChromium renders report.html in headless Chromium (make
// report-check) and checks that the tables are there and every embedded chart
// decoded, then takes a screenshot and a PDF and checks they are not blank.
func TestReportRendersInChromium(t *testing.T) {
	bin := os.Getenv("CHROMIUM")
	if bin == "" {
		bin = "chromium"
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Fatalf("%s not found: install Debian's chromium (apt-get install chromium) or set CHROMIUM", bin)
	}
	out := t.TempDir()
	if _, err := Generate(Options{State: filepath.Join("testdata", "states", "failed-cell"), Out: out, Format: "html", Charts: true}); err != nil {
		t.Fatal(err)
	}
	probe := `<!DOCTYPE html><html><body><iframe id="f" src="report.html" width="1200" height="900"></iframe>
<script>
document.getElementById('f').onload = function () {
  var d = document.getElementById('f').contentDocument;
  var imgs = Array.prototype.slice.call(d.images);
  var decoded = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  var rows = d.querySelectorAll('table tbody tr').length;
  document.body.setAttribute('data-result', JSON.stringify({tables: d.querySelectorAll('table').length, rows: rows, images: imgs.length, decoded: decoded, h2: d.querySelectorAll('h2').length}));
};
</script></body></html>`
	if err := os.WriteFile(filepath.Join(out, "probe.html"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files", "--virtual-time-budget=10000", "--user-data-dir=" + filepath.Join(out, "profile")}
	dom, err := exec.Command(bin, append(flags, "--dump-dom", "file://"+filepath.Join(out, "probe.html"))...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	m := regexp.MustCompile(`data-result="([^"]*)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe did not run:\n%s", dom)
	}
	var res struct{ Tables, Rows, Images, Decoded, H2 int }
	if err := json.Unmarshal(bytes.ReplaceAll(m[1], []byte("&quot;"), []byte(`"`)), &res); err != nil {
		t.Fatal(err)
	}
	t.Logf("rendered: %+v", res)
	if res.Tables < 8 || res.Rows < 20 || res.H2 < 10 {
		t.Errorf("tables missing from the rendered report: %+v", res)
	}
	if res.Images != 5 || res.Decoded != res.Images {
		t.Errorf("charts: %d images, %d decoded; want 5, all decoded", res.Images, res.Decoded)
	}
	shot := filepath.Join(out, "report.png")
	pdf := filepath.Join(out, "report.pdf")
	page := "file://" + filepath.Join(out, "report.html")
	if b, err := exec.Command(bin, append(flags, "--window-size=1280,4000", "--screenshot="+shot, page)...).CombinedOutput(); err != nil {
		t.Fatalf("screenshot: %v\n%s", err, b)
	}
	if b, err := exec.Command(bin, append(flags, "--print-to-pdf="+pdf, page)...).CombinedOutput(); err != nil {
		t.Fatalf("pdf: %v\n%s", err, b)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	colours := map[uint32]bool{}
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y += 7 {
		for x := bnd.Min.X; x < bnd.Max.X; x += 7 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[(r>>8)<<16|(g>>8)<<8|b>>8] = true
		}
	}
	if len(colours) < 20 {
		t.Errorf("the screenshot has %d colours: blank page?", len(colours))
	}
	if p, _ := os.ReadFile(pdf); !bytes.HasPrefix(p, []byte("%PDF")) || len(p) < 20000 {
		t.Errorf("report.pdf is %d bytes", len(p))
	}
	if dir := os.Getenv("REPORT_CHECK_OUT"); dir != "" {
		_ = os.MkdirAll(dir, 0o755)
		for _, n := range []string{"report.png", "report.pdf", "report.html"} {
			b, _ := os.ReadFile(filepath.Join(out, n))
			_ = os.WriteFile(filepath.Join(dir, n), b, 0o644)
		}
	}
}
