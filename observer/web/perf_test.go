package web_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/livetest"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/observer"
	"github.com/gpusched/gpusched/observer/web"
)

// TestDashboardShowsPerformanceLevels (issue 44 item 4): on a cluster
// with a variability profile each GPU card shows its performance level
// per class, and hovering a class says what it means (its multiplier
// against the median GPU, its level of how many).
func TestDashboardShowsPerformanceLevels(t *testing.T) {
	exe := chromium(t)
	shape, err := model.ParseGPUs("4xV100-16GB")
	if err != nil {
		t.Fatal(err)
	}
	if err := shape.SetVariability([]map[string]float64{{"classA": 0.9}, {"classA": 0.91}, {"classA": 1.2}, {"classA": 1.21}}); err != nil {
		t.Fatal(err)
	}
	_, nc := livetest.Cluster(t, cluster.Config{Hardware: cluster.Hardware{Shape: shape}, Timing: cluster.Timing{Speed: 60}})
	w := livetest.Watcher(t, nc, observer.WatchOptions{Interval: 100 * time.Millisecond})
	srv := httptest.NewServer(web.New(w, observer.NewControl(nc, events.NewSubjects("")), nil))
	t.Cleanup(srv.Close)
	ctx := browser(t, exe)
	fast := chromedp.CSS(`.gpu-card .perf .level-0`)
	slow := chromedp.CSS(`.gpu-card .perf .level-1`)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), chromedp.WaitVisible(fast), chromedp.WaitVisible(slow)); err != nil {
		t.Fatalf("no GPU card shows its performance levels: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(slow))
	if err != nil {
		t.Fatal(err)
	}
	attr, err := chromedp.Run(ctx, chromedp.AttributeValue(slow, "title"))
	if err != nil {
		t.Fatal(err)
	}
	title := attr.Value
	screenshot(t, ctx, "dashboard-perf-levels.png")
	if text != "A L1" || !strings.Contains(title, "classA") || !strings.Contains(title, "performance level 1 of 2") || !strings.Contains(title, "slower than the median GPU") {
		t.Errorf("the slow GPU's level reads %q, hover %q", text, title)
	}
}
