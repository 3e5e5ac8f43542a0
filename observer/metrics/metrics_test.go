package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/internal/livetest"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/observer"
	"github.com/gpusched/gpusched/observer/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestScrape attaches the exporter to the reference cluster, places a job
// and scrapes /metrics: per-GPU utilisation and VRAM, jobs by state, the
// placement latency histogram, fragmentation and energy are there with
// their conventional names, and the names pass Prometheus's own lint.
func TestScrape(t *testing.T) {
	_, nc := livetest.Cluster(t, cluster.Config{Speed: 60})
	exp := metrics.New(nil)
	w := livetest.Watcher(t, nc, observer.WatchOptions{Interval: 50 * time.Millisecond,
		OnEvent: exp.OnEvent, OnSnapshot: exp.OnSnapshot})
	exp.SetGaps(w.Gaps())
	srv := httptest.NewServer(exp.Handler())
	t.Cleanup(srv.Close)

	if _, err := nc.Request("gpusched.job.submit", []byte(`{"name":"scraped","vram":"20GB","util":70,"duration":"5h","gpu":"gpu-2"}`), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var body string
	testbus.WaitFor(t, "the job in the scrape", 10*time.Second, func() bool {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		return strings.Contains(body, `gpusched_gpu_utilization_ratio{gpu="gpu-2",model="A100-40GB",node="node-0"} 0.7`) &&
			strings.Contains(body, `gpusched_jobs{state="running"} 1`)
	})
	for _, want := range []string{
		`gpusched_gpu_vram_used_bytes{gpu="gpu-2",model="A100-40GB",node="node-0"} 2.147483648e+10`,
		`gpusched_gpu_vram_total_bytes{gpu="gpu-7",model="A100-80GB",node="node-1"}`,
		`gpusched_gpu_up{gpu="gpu-7",model="A100-80GB",node="node-1"} 1`,
		`gpusched_queue_length 0`,
		`gpusched_placement_latency_seconds_count 1`,
		`gpusched_preemptions_total 0`,
		`gpusched_jobs_total{state="completed"} `,
		"# TYPE gpusched_jobs_total counter",
		`gpusched_fragmentation_gpus `,
		`gpusched_vram_fragmentation_ratio `,
		`gpusched_energy_joules_total `,
		`gpusched_gpus{state="total"} 8`,
		`gpusched_observer_events_missed_total 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	problems, err := testutil.CollectAndLint(exp)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
