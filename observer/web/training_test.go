package web_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/livetest"
	"github.com/gpusched/gpusched/internal/tracedir"
	"github.com/gpusched/gpusched/observer"
	"github.com/gpusched/gpusched/observer/web"
	"github.com/gpusched/gpusched/pollux"
	"github.com/gpusched/gpusched/sim"
)

// TestDashboardShowsTrainingJobs: on a cluster of two nodes of four GPUs
// that runs training jobs (the Pollux model from the traces: skipped
// without them), the page shows a running training job with its replicas,
// its application and its epoch, and a queued one with its replicas,
// where an ordinary job shows VRAM, duration and done %.
func TestDashboardShowsTrainingJobs(t *testing.T) {
	exe := chromium(t)
	m, err := pollux.Load(tracedir.Pollux(t))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := pollux.NewPolicy("tiresias")
	_, nc := livetest.Cluster(t, cluster.Config{
		Hardware:   cluster.Hardware{Shape: sim.PolluxShape(pollux.Cluster{Nodes: 2, GPUsPerNode: 4})},
		Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour, Training: &core.TrainingConfig{Model: m, Policy: p, Interval: time.Minute, Origin: time.Now()}},
		Timing:     cluster.Timing{Speed: 60},
	})
	w := livetest.Watcher(t, nc, observer.WatchOptions{Interval: 100 * time.Millisecond})
	srv := httptest.NewServer(web.New(w, observer.NewControl(nc, events.NewSubjects("")), nil))
	t.Cleanup(srv.Close)
	for _, body := range []string{`{"name":"bert-4","training":{"app":"bert","batch":384,"replicas":4}}`,
		`{"name":"bert-6","training":{"app":"bert","batch":384,"replicas":6}}`} {
		if _, err := nc.Request("gpusched.job.submit", []byte(body), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	ctx := browser(t, exe)
	running := chromedp.CSS(`#running tr[data-name="bert-4"]`)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), chromedp.WaitVisible(running),
		chromedp.WaitVisible(chromedp.Search(`//table[@id="queue"]//tr[contains(., "bert-6") and contains(., "6×GPU")]`)),
		chromedp.WaitVisible(chromedp.Search(`//table[@id="running"]//tr[@data-name="bert-4" and contains(., "4×GPU") and contains(., "bert") and contains(., "epoch ")]`)),
	); err != nil {
		row, _ := chromedp.Run(ctx, chromedp.Text(running))
		t.Fatalf("the page does not show the training jobs as such (running row %q): %v", row, err)
	}
}
