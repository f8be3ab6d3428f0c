//go:build reportcheck

package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The browser check of report.html (make report-check; .ci/run runs it whenever
// Debian's chromium is installed). Each state's report is rendered in headless
// Chromium and held to what the generator wrote:
//   - the browser parsed the same document: as many tables, body rows, section
//     headings and images as the HTML has, no header cell empty, and no Markdown
//     (** or `) shown as text;
//   - every chart is there and drawn: each embedded image decoded, at the pixel size
//     of its PNG under charts/, laid out at least 300 px wide without being
//     squashed, and inside the page's width;
//   - the page logs nothing to the console (the report has no scripts, so any
//     message is an error: a bad data URI, a blocked resource);
//   - every in-page link (the GPU summary's link to its full table) finds its
//     section, and the first details heading starts inside the first 900 px;
//   - a screenshot at 1280×2000 is that size, shows more than a blank page, and the
//     page's own height is a sane one; the PDF is a real PDF.
//
// REPORT_CHECK_OUT=DIR keeps each state's report.html, screenshot and PDF.

// reportCheckStates are the states rendered: a failed cell (withheld figures,
// failure tables) and a promoted candidate (the verdict's tables and charts).
var reportCheckStates = []string{"failed-cell", "verdict-faster"}

const probeJS = `<!DOCTYPE html><html><body><iframe id="f" src="report.html" width="1200" height="900"></iframe>
<script>
document.getElementById('f').onload = function () {
  var d = document.getElementById('f').contentDocument;
  var width = d.documentElement.clientWidth;
  var imgs = Array.prototype.map.call(d.images, function (i) {
    var r = i.getBoundingClientRect();
    return {complete: i.complete, nw: i.naturalWidth, nh: i.naturalHeight, w: r.width, h: r.height, right: r.right};
  });
  var emptyTH = Array.prototype.filter.call(d.querySelectorAll('th'), function (th) { return th.textContent.trim() === ''; }).length;
  document.body.setAttribute('data-result', JSON.stringify({
    tables: d.querySelectorAll('table').length, rows: d.querySelectorAll('table tbody tr').length,
    h2: d.querySelectorAll('h2').length, figures: d.querySelectorAll('figure.chart').length,
    emptyTH: emptyTH, images: imgs, width: width, scrollHeight: d.documentElement.scrollHeight,
    markup: (d.body.innerText.match(/.{0,40}(\*\*|\x60).{0,40}/g) || []),
    links: d.querySelectorAll('a[href^="#"]').length,
    brokenLinks: Array.prototype.filter.call(d.querySelectorAll('a[href^="#"]'), function (a) { return !d.getElementById(a.getAttribute('href').slice(1)); }).map(function (a) { return a.getAttribute('href'); }),
    firstH2Top: d.querySelector('h2').getBoundingClientRect().top}));
};
</script></body></html>`

type probeResult struct {
	Tables, Rows, H2, Figures, EmptyTH int
	Images                             []struct {
		Complete    bool
		NW, NH      int
		W, H, Right float64
	}
	Width, ScrollHeight float64
	// Markup is text around any ** or ` the reader sees: Markdown shown literally.
	Markup []string
	// Links to sections of the page, those whose section is missing, and where the
	// first details heading starts (the first screen ends there).
	Links       int
	BrokenLinks []string
	FirstH2Top  float64
}

func TestReportRendersInChromium(t *testing.T) {
	bin := os.Getenv("CHROMIUM")
	if bin == "" {
		bin = "chromium"
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Fatalf("%s not found: install Debian's chromium (apt-get install chromium) or set CHROMIUM", bin)
	}
	for _, state := range reportCheckStates {
		t.Run(state, func(t *testing.T) { checkInChromium(t, bin, state) })
	}
}

func checkInChromium(t *testing.T, bin, state string) {
	start := time.Now()
	out := t.TempDir()
	files, err := Generate(Options{State: filepath.Join("testdata", "states", state), Out: out, Format: "html", Charts: true})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	// What the generator wrote: the browser must find the same.
	src := string(doc)
	want := probeResult{Tables: strings.Count(src, "<table>"), H2: strings.Count(src, "<h2>"), Figures: strings.Count(src, `<figure class="chart"`)}
	want.Rows = strings.Count(src, "<tr>") - want.Tables // one header row per table
	var chartSizes [][2]int
	for _, f := range files {
		if !strings.HasSuffix(f, ".png") {
			continue
		}
		fh, err := os.Open(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(fh)
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		chartSizes = append(chartSizes, [2]int{cfg.Width, cfg.Height})
	}
	if want.Tables == 0 || len(chartSizes) == 0 || want.Figures != len(chartSizes) {
		t.Fatalf("the report of %s has %d tables, %d chart figures and %d chart PNGs: nothing to check", state, want.Tables, want.Figures, len(chartSizes))
	}

	if err := os.WriteFile(filepath.Join(out, "probe.html"), []byte(probeJS), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files", "--virtual-time-budget=10000",
		"--enable-logging=stderr", "--v=0", "--user-data-dir=" + filepath.Join(out, "profile")}
	run := func(args ...string) (stdout []byte) {
		t.Helper()
		cmd := exec.Command(bin, append(slices.Clone(flags), args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		// Console messages of the page (and of the report in its frame) are logged
		// as INFO:CONSOLE lines; the probe logs nothing and the report has no script.
		for _, l := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(l, ":CONSOLE") {
				t.Errorf("console message: %s", l)
			}
		}
		return stdout
	}

	dom := run("--dump-dom", "file://"+filepath.Join(out, "probe.html"))
	m := regexp.MustCompile(`data-result="([^"]*)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe did not run:\n%s", dom)
	}
	var got probeResult
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &got); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d tables, %d rows, %d headings, %d charts, page %.0f×%.0f px", state, got.Tables, got.Rows, got.H2, len(got.Images), got.Width, got.ScrollHeight)
	if got.Tables != want.Tables || got.Rows != want.Rows || got.H2 != want.H2 || got.Figures != want.Figures {
		t.Errorf("the browser found %d tables, %d body rows, %d headings, %d chart figures; the HTML has %d, %d, %d, %d",
			got.Tables, got.Rows, got.H2, got.Figures, want.Tables, want.Rows, want.H2, want.Figures)
	}
	for _, h := range got.BrokenLinks {
		t.Errorf("the link to %s leads nowhere on the page", h)
	}
	if wantLinks := strings.Count(src, `<a href="#`); got.Links != wantLinks || wantLinks == 0 {
		t.Errorf("the browser found %d in-page links; the HTML has %d", got.Links, wantLinks)
	}
	// What was compared, the verdict and the figures that decided it fit in the
	// probe's 1200×900 frame: the first details heading starts on the first screen.
	t.Logf("%s: the first details heading starts %.0f px down", state, got.FirstH2Top)
	if got.FirstH2Top <= 0 || got.FirstH2Top > 900 {
		t.Errorf("the first details heading starts %.0f px down: the first screen does not fit a 900 px window", got.FirstH2Top)
	}
	for _, x := range got.Markup {
		t.Errorf("Markdown shown as text: %q", x)
	}
	if got.EmptyTH > 0 {
		t.Errorf("%d table header cell(s) are empty", got.EmptyTH)
	}
	var drawn [][2]int
	for i, im := range got.Images {
		name := fmt.Sprintf("image %d of %d", i+1, len(got.Images))
		switch {
		case !im.Complete || im.NW == 0:
			t.Errorf("%s did not decode", name)
		case im.W < 300:
			t.Errorf("%s is laid out %.0f px wide: too small to read", name, im.W)
		case im.Right > got.Width+1:
			t.Errorf("%s ends at %.0f px, past the page's %.0f px", name, im.Right, got.Width)
		}
		if im.NW > 0 && im.W > 0 {
			if r := (im.H / im.W) / (float64(im.NH) / float64(im.NW)); r < 0.98 || r > 1.02 {
				t.Errorf("%s is drawn %.0f×%.0f px, not in its %d×%d proportions", name, im.W, im.H, im.NW, im.NH)
			}
		}
		drawn = append(drawn, [2]int{im.NW, im.NH})
	}
	less := func(a, b [2]int) int { return (a[0]-b[0])*100000 + a[1] - b[1] }
	slices.SortFunc(drawn, less)
	slices.SortFunc(chartSizes, less)
	if !slices.Equal(drawn, chartSizes) {
		t.Errorf("the page's images are %v px; the charts written are %v px", drawn, chartSizes)
	}
	if got.ScrollHeight < 1000 || got.ScrollHeight > 100000 {
		t.Errorf("the page is %.0f px tall", got.ScrollHeight)
	}

	shot, pdf, page := filepath.Join(out, "report.png"), filepath.Join(out, "report.pdf"), "file://"+filepath.Join(out, "report.html")
	run("--window-size=1280,2000", "--screenshot="+shot, page)
	run("--print-to-pdf="+pdf, page)
	fh, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(fh)
	fh.Close()
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2000 {
		t.Errorf("the screenshot is %d×%d px, want 1280×2000", b.Dx(), b.Dy())
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
		dir = filepath.Join(dir, state)
		_ = os.MkdirAll(dir, 0o755)
		for _, n := range []string{"report.png", "report.pdf", "report.html"} {
			b, _ := os.ReadFile(filepath.Join(out, n))
			_ = os.WriteFile(filepath.Join(dir, n), b, 0o644)
		}
	}
	t.Logf("%s checked in %s", state, time.Since(start).Round(100*time.Millisecond))
}
