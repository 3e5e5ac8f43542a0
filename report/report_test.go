package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/livetest"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/observer"
	"github.com/gpusched/gpusched/replay"
	"github.com/gpusched/gpusched/report"
	"github.com/gpusched/gpusched/sim"
)

// checkPNGs opens every PNG the report wrote: each must decode as an image
// of the report's size.
func checkPNGs(t *testing.T, w *report.Written, want ...string) {
	t.Helper()
	names := map[string]bool{}
	for _, f := range w.Files {
		names[filepath.Base(f)] = true
		if !strings.HasSuffix(f, ".png") {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(fh)
		fh.Close()
		if err != nil || cfg.Width < 500 || cfg.Height < 300 {
			t.Errorf("%s: not a readable plot (%v, %dx%d)", f, err, cfg.Width, cfg.Height)
		}
	}
	for _, n := range want {
		if !names[n] {
			t.Errorf("the report lacks %s (wrote %v)", n, w.Files)
		}
	}
}

func readSummary(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReportOfACompareFolder writes what cluster compare writes for two
// policies and reports on it: the summary agrees with the runs', and the
// plots (over time, JCT by priority, policies side by side) are there.
func TestReportOfACompareFolder(t *testing.T) {
	shape, err := model.ParseGPUs(model.DefaultGPUs)
	if err != nil {
		t.Fatal(err)
	}
	in := t.TempDir()
	want := map[string]int{}
	for _, pol := range []string{"binpack", "spread"} {
		res, err := sim.Run(context.Background(), sim.Config{Shape: shape, Policy: pol, Seed: 3, Rate: 6, Hours: 12})
		if err != nil {
			t.Fatal(err)
		}
		want[pol] = sim.Summarize(res).Completed
		for name, write := range map[string]func(f *os.File) error{
			"jobs-" + pol + ".csv":   func(f *os.File) error { return sim.WriteJobs(f, res.Jobs) },
			"series-" + pol + ".csv": func(f *os.File) error { return sim.WriteSeries(f, res.Series) },
		} {
			f, err := os.Create(filepath.Join(in, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := write(f); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	out := t.TempDir()
	w, err := report.Make(in, out, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Kind != report.KindCompare {
		t.Fatalf("kind %s, want compare", w.Kind)
	}
	checkPNGs(t, w, "summary.txt", "summary.json", "jobs-binpack.csv", "utilisation.png", "fragmentation.png",
		"queue.png", "jct-medium.png", "jct-p50-by-policy.png", "jct-p95-by-policy.png")
	runs := readSummary(t, out)["runs"].([]any)
	if len(runs) != 2 {
		t.Fatalf("%d runs in summary.json, want 2", len(runs))
	}
	for _, r := range runs {
		r := r.(map[string]any)
		if got := int(r["completed"].(float64)); got != want[r["policy"].(string)] {
			t.Errorf("%s: the report counts %d completed, the run %d", r["policy"], got, want[r["policy"].(string)])
		}
	}
}

// TestReportOfARecording records a live cluster with observer's Log (what
// observer record runs) while three jobs run to completion, then reports
// on the recording: three jobs completed, with their CSV and plots.
func TestReportOfARecording(t *testing.T) {
	_, nc := livetest.Cluster(t, cluster.Config{Timing: cluster.Timing{Speed: 3600, MetricsPeriod: 50 * time.Millisecond}})
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- observer.Log(ctx, nc, events.NewSubjects(""), observer.History{}, lockedWriter{&mu, &buf})
	}()
	// The recorder subscribes asynchronously: wait until it sees metrics.
	testbus.WaitFor(t, "the recorder to get events", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(buf.String(), "gpusched.metrics.cluster")
	})
	for _, j := range []string{
		`{"name":"rec-a","priority":"high","vram":"10GB","util":50,"duration":"20m"}`,
		`{"name":"rec-b","priority":"low","vram":"10GB","util":50,"duration":"40m"}`,
		`{"name":"rec-c","priority":"low","vram":"30GB","util":80,"duration":"30m"}`,
	} {
		if _, err := nc.Request("gpusched.job.submit", []byte(j), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	testbus.WaitFor(t, "three completed events in the recording", 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Count(buf.String(), `"type":"gpusched.job.completed"`) == 3
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := filepath.Join(dir, "run.jsonl")
	mu.Lock()
	os.WriteFile(run, buf.Bytes(), 0o644)
	mu.Unlock()
	out := filepath.Join(dir, "report")
	w, err := report.Make(run, out, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, w, "jobs.csv", "series.csv", "summary.txt", "utilisation.png", "fragmentation.png", "queue.png", "jct.png")
	r := readSummary(t, out)["runs"].([]any)[0].(map[string]any)
	if r["completed"].(float64) != 3 || r["policy"] != "binpack" {
		t.Fatalf("summary %v, want 3 completed under binpack", r)
	}
	// A recording has no wall time of a run: the summary says so, not "0s".
	txt, _ := os.ReadFile(filepath.Join(out, "summary.txt"))
	for _, l := range strings.Split(string(txt), "\n") {
		if strings.Contains(l, "simulated / wall") && !strings.HasSuffix(strings.TrimSpace(l), "/ -") {
			t.Fatalf("a recording's summary line %q, want the wall time as -", l)
		}
	}
	f, _ := os.Open(filepath.Join(out, "jobs.csv"))
	defer f.Close()
	jobs, err := sim.ReadJobs(f)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("jobs.csv: %d jobs (%v), want 3", len(jobs), err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestReportOfAReplayFolder reports on curves named as cluster replay
// writes them (a workload name with underscores, policies with dashes):
// one allocation and one fragmentation plot per workload.
func TestReportOfAReplayFolder(t *testing.T) {
	in := t.TempDir()
	for _, name := range []string{"openb_pod_list_default_gpu-packing_42.csv", "openb_pod_list_default_fgd_42.csv", "openb_pod_list_default_fgd_43.csv"} {
		pts := make([]replay.Point, replay.MaxArrived+1)
		for k := range pts {
			pts[k] = replay.Point{Arrived: k, Alloc: min(float64(k), 90), Frag: 14 - float64(k)/20, FragRatio: 20, Events: 1}
		}
		f, err := os.Create(filepath.Join(in, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := replay.WriteCurve(f, pts); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	w, err := report.Make(in, t.TempDir(), report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, w, "alloc-openb_pod_list_default.png", "frag-openb_pod_list_default.png")
	if _, err := report.Make(t.TempDir(), t.TempDir(), report.Options{}); err == nil || !strings.Contains(err.Error(), "neither a recording") {
		t.Fatalf("an empty folder: %v, want an error saying what a report reads", err)
	}
}

// TestAGavelCompareFolderIsDrawn (issue 40): a cluster compare --gavel
// folder gets a JCT CDF and a ρ CDF per policy; a file with a bad number
// is an error naming its line and column.
func TestAGavelCompareFolderIsDrawn(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	files := map[string]string{
		"gavel-isolated-0.csv": "job_id,submit_s,jct_s,job_type,scale_factor,rho\n0,0,3600,\"A3C\",1,1\n1,0,7200,\"A3C\",1,1\n",
		"gavel-fifo-0.csv":     "job_id,submit_s,jct_s,job_type,scale_factor,rho\n0,0,1800,\"A3C\",1,0.5\n1,0,14400,\"A3C\",1,2\n",
		"summary.txt":          "figure fifo isolated\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(in, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := report.Make(in, out, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Kind != report.KindGavel {
		t.Fatalf("kind %s, want gavel", w.Kind)
	}
	checkPNGs(t, w, "jct-cdf.png", "rho-cdf.png", "summary.txt")
	if err := os.WriteFile(filepath.Join(in, "gavel-fifo-1.csv"), []byte("job_id,submit_s,jct_s,job_type,scale_factor,rho\n0,0,soon,\"A3C\",1,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := report.Make(in, t.TempDir(), report.Options{}); err == nil || !strings.Contains(err.Error(), "line 2, jct_s") {
		t.Fatalf("a bad JCT: error %v, want one naming line 2, jct_s", err)
	}
}

// TestAGavelSweepIsDrawn (issue 40): a sweep folder (sweep.csv) gets the
// mean JCT by input rate, a line per policy.
func TestAGavelSweepIsDrawn(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	csv := "lam_s,jobs_per_hour,policy,seeds,jct_mean_s,jct_p50_s,jct_p90_s,makespan_s,utilisation,rho_mean,rho_p90\n" +
		"7200,0.5,gandiva,3,60000,1,1,1,0.3,,\n14400,0.25,gandiva,3,58000,1,1,1,0.2,,\n" +
		"7200,0.5,max_min_fairness_perf,3,50000,1,1,1,0.3,,\n14400,0.25,max_min_fairness_perf,3,49000,1,1,1,0.2,,\n"
	if err := os.WriteFile(filepath.Join(in, "sweep.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := report.Make(in, out, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Kind != report.KindGavelSweep {
		t.Fatalf("kind %s, want gavel-sweep", w.Kind)
	}
	checkPNGs(t, w, "jct-by-rate.png", "sweep.csv")
}

// TestAPolluxReplayFolderIsDrawn (issue 45 item 2): a cluster replay
// --pollux folder is no longer refused: it gets the JCT CDF and each
// workload's average JCT, with the published ones (a results-jobload
// summary of our own making) beside them.
func TestAPolluxReplayFolderIsDrawn(t *testing.T) {
	in, out, data := t.TempDir(), t.TempDir(), t.TempDir()
	for name, text := range map[string]string{
		"workload-1_tiresias_1.0.csv": "name,submit_s,jct_s,restarts\ncifar10-0,53,902,0\nbert-1,60,7200,1\n",
		"workload-2_tiresias_1.0.csv": "name,submit_s,jct_s,restarts\nncf-0,0,600,0\n",
	} {
		if err := os.WriteFile(filepath.Join(in, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pub := filepath.Join(data, "results-jobload", "tiresias-1.0")
	if err := os.MkdirAll(pub, 0o755); err != nil {
		t.Fatal(err)
	}
	summary := `{"jcts":{"workload-1":{"cifar10-0":902,"bert-1":7000},"workload-2":{"ncf-0":600}},"avgs":{"workload-1":3951,"workload-2":600}}`
	if err := os.WriteFile(filepath.Join(pub, "summary.json"), []byte(summary), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := report.Make(in, out, report.Options{Pollux: data})
	if err != nil {
		t.Fatal(err)
	}
	if w.Kind != report.KindPollux {
		t.Fatalf("kind %s, want pollux", w.Kind)
	}
	checkPNGs(t, w, "jct-cdf.png", "avg-jct-by-workload.png", "workload-1_tiresias_1.0.csv")
}

// TestAPALReplayFolderIsDrawn (issue 44): a cluster replay --pal folder
// gets the JCT CDF of each run, a heat map per class of its profile and,
// per run with its rounds, which job held each GPU round by round;
// a cluster compare --pal sweep gets the normalised JCT by locality.
func TestAPALReplayFolderIsDrawn(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	profile := "GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD,sf_classA,level_classA,sf_classB,level_classB,sf_classC,level_classC,sf_classD,level_classD\n"
	for g := range 8 {
		profile += fmt.Sprintf("%d,%d,%g,1,1,1,1,%d,1,0,1,0,1,0\n", g, g/4, 0.9+0.1*float64(g), g/6)
	}
	for name, text := range map[string]string{
		"w1_fifo_PAL.jobs.csv":     "job_id,submit_s,finish_s,jct_s,num_gpus,model,perfclass,iter_time_s,total_iters,nominal_runtime_s,last_pm_penalty,last_locality_penalty\r\n6,421.0,1080,659.0,1,vgg19,classC,0.300610341,64.0,19.239062,0.98,1.0\r\n7,466.0,1440,974.0,16,PointNet,classD,0.28125,1042.0,293.0625,1.0,1.7\r\n",
		"w1_fifo_PMFirst.jobs.csv": "job_id,submit_s,finish_s,jct_s,num_gpus,model,perfclass,iter_time_s,total_iters,nominal_runtime_s,last_pm_penalty,last_locality_penalty\r\n6,421.0,1440,1019.0,1,vgg19,classC,0.300610341,64.0,19.239062,0.98,1.0\r\n",
		"profile-seed-42.csv":      profile,
		"w1_fifo_PAL.rounds.jsonl": `{"t":0,"free_gpus":8,"jobs_running":0,"jobs_in_queue":1,"alloc":{},"pm":{},"loc":{}}` + "\n" +
			`{"t":360,"free_gpus":7,"jobs_running":1,"jobs_in_queue":1,"alloc":{"6":[0]},"pm":{"6":0.98},"loc":{"6":1}}` + "\n" +
			`{"t":720,"free_gpus":3,"jobs_running":2,"jobs_in_queue":0,"alloc":{"6":[0],"7":[1,2,4,5]},"pm":{"6":0.98,"7":1.0},"loc":{"6":1,"7":1.7}}` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(in, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := report.Make(in, out, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Kind != report.KindPAL {
		t.Fatalf("kind %s, want pal", w.Kind)
	}
	checkPNGs(t, w, "jct-cdf.png", "profile-seed-42-classA.png", "profile-seed-42-classD.png", "w1_fifo_PAL.jobs.csv", "w1_fifo_PAL-gpus.png")

	in, out = t.TempDir(), t.TempDir()
	sweep := "locality_penalty,policy,geomean_avg_jct_normalised\n1,pal,0.64\n3,pal,0.63\n1,packed-nonsticky,1\n3,packed-nonsticky,1\n"
	if err := os.WriteFile(filepath.Join(in, "sweep.csv"), []byte(sweep), 0o644); err != nil {
		t.Fatal(err)
	}
	if w, err = report.Make(in, out, report.Options{}); err != nil {
		t.Fatal(err)
	}
	if w.Kind != report.KindPALSweep {
		t.Fatalf("kind %s, want pal-sweep", w.Kind)
	}
	checkPNGs(t, w, "jct-by-locality.png", "sweep.csv")
}
