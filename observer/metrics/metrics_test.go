package metrics_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
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
	_, nc := livetest.Cluster(t, cluster.Config{Timing: cluster.Timing{Speed: 60}})
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

// TestGPUEnergyRunsBetweenStatuses (issue 45 item 5): a GPU reports its
// energy only when something changes on it; between reports its meter
// runs on at the power it last reported (an idle GPU draws its idle
// power), and never goes back.
func TestGPUEnergyRunsBetweenStatuses(t *testing.T) {
	exp := metrics.New(nil)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	feed := func(typ string, at time.Time, data any) {
		b, _ := json.Marshal(data)
		exp.OnEvent(&events.Decoded{Type: typ, SimTime: at, Data: b}, "")
	}
	energy := func() float64 {
		t.Helper()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(exp)
		got, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range got {
			if mf.GetName() == "gpusched_gpu_energy_joules_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		t.Fatal("no gpusched_gpu_energy_joules_total")
		return 0
	}
	status := events.GPUStatus{GPU: "gpu-0", Node: "node-0", Model: "A100-40GB", EnergyJ: 100, PowerW: 50}
	feed(events.Type("gpu", events.GPUStatusType), t0, status)
	if e := energy(); e != 100 {
		t.Fatalf("at its report: %v J, want 100", e)
	}
	feed(events.Type("metrics", "cluster"), t0.Add(10*time.Second), events.Metrics{})
	if e := energy(); e != 600 {
		t.Fatalf("10 s later at 50 W: %v J, want 600", e)
	}
	status.EnergyJ, status.PowerW = 550, 0 // a late report below what was exported
	feed(events.Type("gpu", events.GPUStatusType), t0.Add(5*time.Second), status)
	if e := energy(); e != 600 {
		t.Fatalf("after an older, lower report: %v J, want 600 (a counter never goes back)", e)
	}
}
