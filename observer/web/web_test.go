package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/livetest"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/observer"
	"github.com/gpusched/gpusched/observer/web"
)

// chromium finds Debian's headless browser; .ci/run installs it.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH: install Debian's (apt-get install chromium), as .ci/run does, to run the browser test")
	return ""
}

// startDashboard runs the reference cluster and the web dashboard over it.
func startDashboard(t *testing.T, gpus string) (url string, nc *nats.Conn) {
	t.Helper()
	shape, err := model.ParseGPUs(gpus)
	if err != nil {
		t.Fatal(err)
	}
	_, nc = livetest.Cluster(t, cluster.Config{Hardware: cluster.Hardware{Shape: shape}, Timing: cluster.Timing{Speed: 1}})
	w := livetest.Watcher(t, nc, observer.WatchOptions{Interval: 100 * time.Millisecond})
	srv := httptest.NewServer(web.New(w, observer.NewControl(nc, events.NewSubjects("")), nil))
	t.Cleanup(srv.Close)
	return srv.URL, nc
}

// TestDashboardInChromium drives the page in headless Chromium: it shows the
// cluster's GPUs, the add-job form makes the job appear where the scheduler
// put it, switching the strategy changes the next placement (binpack
// stacks the second job on the first one's GPU, spread puts the third on
// an idle GPU), the fragmentation toggle draws the VRAM layout, and a kill
// button crashes a GPU. A screenshot is written for a person to look at
// ($GPUSCHED_SCREENSHOTS, or the test's temporary directory).
func TestDashboardInChromium(t *testing.T) {
	exe := chromium(t)
	url, _ := startDashboard(t, model.DefaultGPUs)
	ctx := browser(t, exe)

	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`.gpu-card[data-gpu="gpu-7"]`))); err != nil {
		t.Fatalf("the page did not show the GPUs: %v", err)
	}
	cards, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".gpu-card").length`))
	if err != nil {
		t.Fatal(err)
	}
	if cards != 8 {
		t.Fatalf("%d GPU cards, want the reference cluster's 8", cards)
	}
	// An empty queue says so, and what to do (issue 24 item 6).
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.Search(`//table[@id="queue"]//tr[contains(., "0 waiting")]`))); err != nil {
		t.Fatalf("the empty queue says nothing: %v", err)
	}
	// Every element that names an explanation shows it on hover, and the
	// strategy control says what the chosen policy costs.
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.Search(`//div[@id="strategy-note" and contains(., "busiest")]`))); err != nil {
		t.Fatalf("the strategy control does not show binpack's trade-off: %v", err)
	}
	untitled, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("[data-help]")].filter((e) => !e.title).map((e) => e.dataset.help)`))
	if err != nil {
		t.Fatal(err)
	}
	helped, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-help][title]").length`))
	if err != nil {
		t.Fatal(err)
	}
	if len(untitled) > 0 || helped < 30 {
		t.Fatalf("%d elements explain themselves on hover; without a text: %v", helped, untitled)
	}
	// addJob fills the form and waits for the job in the running table;
	// it returns the GPU the table shows.
	addJob := func(name string) string {
		t.Helper()
		row := chromedp.CSS(fmt.Sprintf(`#running tr[data-name=%q] td.gpu`, name))
		if err := chromedp.Do(ctx,
			chromedp.SetValue(chromedp.CSS(`#job-name`), name),
			chromedp.SetValue(chromedp.CSS(`#job-vram`), "10GB"),
			chromedp.SetValue(chromedp.CSS(`#job-util`), "30"),
			chromedp.SetValue(chromedp.CSS(`#job-duration`), "10h"),
			chromedp.Click(chromedp.CSS(`#job-submit`)),
			chromedp.WaitVisible(row),
		); err != nil {
			t.Fatalf("job %s did not appear in the running table: %v", name, err)
		}
		gpu, err := chromedp.Run(ctx, chromedp.Text(row))
		if err != nil {
			t.Fatal(err)
		}
		return gpu
	}
	first := addJob("web-job-1")
	second := addJob("web-job-2")
	if second != first {
		t.Fatalf("binpack put web-job-2 on %s, want it stacked on web-job-1's %s", second, first)
	}
	if err := chromedp.Do(ctx,
		chromedp.WaitReady(chromedp.CSS(`#strategy option[value="spread"]`)),
		chromedp.SetValue(chromedp.CSS(`#strategy`), "spread"),
		chromedp.Evaluate[chromedp.Void](`void document.querySelector("#strategy").dispatchEvent(new Event("change"))`),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="policy" and text()="spread"]`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="strategy-note" and contains(., "least busy")]`)),
	); err != nil {
		t.Fatalf("switching the strategy (and its trade-off under it): %v", err)
	}
	third := addJob("web-job-3")
	if third == first {
		t.Fatalf("after switching to spread web-job-3 went to %s with the others, want an idle GPU", third)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#frag-toggle`)), chromedp.WaitVisible(chromedp.CSS(`.gpu-card .layout`))); err != nil {
		t.Fatalf("fragmentation view: %v", err)
	}
	holes, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".gpu-card .layout span").length`))
	if err != nil {
		t.Fatal(err)
	}
	if holes != 3 {
		t.Fatalf("the VRAM layout shows %d job blocks, want the 3 jobs", holes)
	}
	shot := screenshot(t, ctx, "dashboard-reference.png")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`.gpu-card[data-gpu=%q] button.kill`, third))),
		chromedp.WaitVisible(chromedp.Search(`//ol[@id="events"]/li[contains(., "down") and contains(., "`+third+`")]`)),
	); err != nil {
		t.Fatalf("kill button: %v", err)
	}
	t.Logf("screenshot: %s", shot)
}

// browser starts headless Chromium for the test.
func browser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 1000), chromedp.Flag("disable-gpu", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancel(); cancelA() })
	return ctx
}

// TestDashboardHundredGPUs shows a 100-GPU cluster with jobs on a third of
// its GPUs: every GPU gets a card (condensed), and a screenshot is kept.
func TestDashboardHundredGPUs(t *testing.T) {
	exe := chromium(t)
	url, nc := startDashboard(t, "64xA100-40GB,36xA100-80GB")
	for i := range 34 {
		body := fmt.Sprintf(`{"name":"train-%d","priority":"medium","vram":"%dGB","util":%d,"duration":"10h","gpu":"gpu-%d"}`, i, 8+i%30, 20+2*i, 3*i)
		if _, err := nc.Request("gpusched.job.submit", []byte(body), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	ctx := browser(t, exe)
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`.gpu-card[data-gpu="gpu-99"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#running tr[data-name="train-33"]`))); err != nil {
		t.Fatalf("the page did not show the 100 GPUs and their jobs: %v", err)
	}
	cards, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#gpus.many .gpu-card").length`))
	if err != nil || cards != 100 {
		t.Fatalf("%d condensed GPU cards (%v), want 100", cards, err)
	}
	t.Logf("screenshot: %s", screenshot(t, ctx, "dashboard-100-gpus.png"))
}

func screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	dir := os.Getenv("GPUSCHED_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(dir, name)
	if strings.HasSuffix(name, ".png") {
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestObserverCredentialsCannotAct: a dashboard run with an observer's
// credentials shows the cluster, and its controls are refused by the NATS
// server: HTTP 403 with the server's words, and nothing is done.
func TestObserverCredentialsCannotAct(t *testing.T) {
	s := livetest.SecureCluster(t, cluster.Config{})
	nc := s.As(t, "observer")
	w := livetest.Watcher(t, nc, observer.WatchOptions{Interval: 100 * time.Millisecond})
	srv := httptest.NewServer(web.New(w, observer.NewControl(nc, events.NewSubjects("")), nil))
	t.Cleanup(srv.Close)
	post := func(path, body string) (int, string) {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	resp, err := http.Get(srv.URL + "/api/state")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/state: %v %v", err, resp)
	}
	resp.Body.Close()
	for path, body := range map[string]string{
		"/api/kill":     `{"gpu":"gpu-3"}`,
		"/api/jobs":     `{"name":"x","vram":"1GB","duration":"1h"}`,
		"/api/strategy": `{"policy":"spread"}`,
	} {
		code, text := post(path, body)
		if code != http.StatusForbidden || !strings.Contains(text, "permission denied") {
			t.Errorf("POST %s as an observer: %d %s, want 403 and the server's refusal", path, code, text)
		}
	}
	admin := s.As(t, "admin")
	msg, err := admin.Request("gpusched.cluster.snapshot", []byte(`{"summary_only":true}`), 5*time.Second)
	for _, want := range []string{`"gpu_deaths":0`, `"policy":"binpack"`, `"jobs_queued":0`, `"jobs_running":0`} {
		if err != nil || !strings.Contains(string(msg.Data), want) {
			t.Fatalf("after the refusals: %v %s, want %s (no kill, no switch, no job)", err, msgBody(msg), want)
		}
	}
}

func msgBody(m *nats.Msg) string {
	if m == nil {
		return ""
	}
	return string(m.Data)
}
