package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/sim"
)

// TestCompareFilesAddUp runs `cluster compare` on the reference cluster,
// reads its per-job CSV back and recomputes the table's JCT percentiles
// from it independently (nearest rank), and checks the time series.
func TestCompareFilesAddUp(t *testing.T) {
	dir := t.TempDir()
	table := captureStdout(t, func() error {
		return timedCommand("compare", []string{"--hours", "12", "--policies", "binpack,spread", "--seed", "3", "--out", dir, "--quiet"})
	})
	for _, p := range []string{"binpack", "spread"} {
		f, err := os.Open(filepath.Join(dir, "jobs-"+p+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := sim.ReadJobs(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) < 50 {
			t.Fatalf("%s: only %d jobs in 12 hours at 6 an hour", p, len(jobs))
		}
		jct := map[string][]float64{}
		for _, j := range jobs {
			if j.State != "completed" || !j.Started || !j.Ended || j.Start < j.Submit || j.End < j.Start || len(j.GPUs) == 0 {
				t.Fatalf("%s: job %s does not add up: %+v", p, j.Job, j)
			}
			if j.Slowdown < 1-1e-9 {
				t.Fatalf("%s: job %s ran faster than alone (slowdown %v)", p, j.Job, j.Slowdown)
			}
			jct[j.Priority] = append(jct[j.Priority], j.End-j.Submit)
		}
		col := map[string]int{"binpack": 0, "spread": 1}[p]
		for prio, xs := range jct {
			sort.Float64s(xs)
			var want []string
			for _, q := range []float64{50, 95, 99} {
				v := xs[int(math.Ceil(q/100*float64(len(xs))))-1]
				want = append(want, fmt.Sprintf("%.2fh", v/3600))
			}
			got := tableCells(t, table, "JCT p50/p95/p99 "+prio, 3)[col]
			if got != strings.Join(want, " ") {
				t.Errorf("%s %s: table says %q, the CSV gives %q", p, prio, got, strings.Join(want, " "))
			}
		}
		series, err := os.ReadFile(filepath.Join(dir, "series-"+p+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(series)), "\n")
		if !strings.HasPrefix(lines[0], "t_s,util_mean,gpus,gpus_busy,gpus_idle,power_w,energy_kwh") || len(lines) < 100 {
			t.Fatalf("%s series: %d lines, header %q", p, len(lines), lines[0])
		}
		var lastEnergy, lastT, busyHours float64
		for _, l := range lines[1:] {
			var ts, util, power, energy float64
			var gpus, busy, idle int
			if _, err := fmt.Sscanf(l, "%f,%f,%d,%d,%d,%f,%f", &ts, &util, &gpus, &busy, &idle, &power, &energy); err != nil {
				t.Fatalf("series line %q: %v", l, err)
			}
			if idle != gpus-busy || energy < lastEnergy {
				t.Fatalf("series line %q: idle is not gpus−busy, or energy went down", l)
			}
			busyHours += float64(busy) * (ts - lastT) / 3600
			lastEnergy, lastT = energy, ts
		}
		// The table prints one decimal and the CSV rounds times to the
		// millisecond: equal to within the last printed digit.
		var table1, table2 float64
		fmt.Sscan(tableCells(t, table, "busy GPU-hours", 1)[col], &table1)
		fmt.Sscan(tableCells(t, table, "energy kWh", 1)[col], &table2)
		if math.Abs(table1-busyHours) > 0.051 {
			t.Errorf("%s: table says %v busy GPU-hours, the series gives %.3f", p, table1, busyHours)
		}
		if math.Abs(table2-lastEnergy) > 0.051 {
			t.Errorf("%s: table says %v kWh, the series ends at %.3f", p, table2, lastEnergy)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.txt")); err != nil {
		t.Fatal(err)
	}
	var summary struct {
		Seeds []uint64
		Runs  []sim.SummaryJSON
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil || json.Unmarshal(b, &summary) != nil || len(summary.Runs) != 2 || len(summary.Seeds) != 1 || summary.Seeds[0] != 3 || summary.Runs[0].Seed != 3 ||
		summary.Runs[1].Policy != "spread" || summary.Runs[0].JCT["low"]["p50"] == nil {
		t.Fatalf("summary.json: %v\n%s", err, b)
	}
}

// TestTimedReplayOfJSONLines replays a user's JSON-lines trace in time.
func TestTimedReplayOfJSONLines(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "mine.jsonl")
	os.WriteFile(trace, []byte(`{"name":"a","vram":"30GB","duration":"1h","submit_at":0}
{"name":"b","vram":"30GB","duration":"30m","submit_at":"10m"}
{"name":"c","vram":"30GB","duration":"30m","priority":"high","submit_at":"20m"}
`), 0o644)
	captureStdout(t, func() error {
		return timedCommand("replay", []string{"--timed", "--jobs", trace, "--gpus", "1xA100-40GB", "--policy", "binpack", "--out", dir, "--quiet"})
	})
	f, err := os.Open(filepath.Join(dir, "jobs-binpack.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jobs, err := sim.ReadJobs(f)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]sim.JobResult{}
	for _, j := range jobs {
		byName[j.Name] = j
	}
	// One GPU and each job needs most of its VRAM: a (medium) starts at 0;
	// b waits from 10m; c (high) arrives at 20m and preempts a, runs alone
	// until 50m; then a and b run (a from scratch: it has no checkpoint).
	a, b, c := byName["a"], byName["b"], byName["c"]
	if len(jobs) != 3 || c.Start != 1200 || c.End != 3000 || a.Preemptions != 1 || b.Start < c.End {
		t.Fatalf("timed replay: %+v", jobs)
	}
}

func TestTimedFlagsSayWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	cases := map[string][]string{
		"--policies":        {"--policies", "binpack,lottery"},
		"--hours":           {"--hours", "-1"},
		"--rate":            {"--rate", "0"},
		"--jobs":            {"--jobs", filepath.Join(dir, "missing.jsonl")},
		"--pods and --jobs": {"--pods", "x.csv", "--jobs", "y.jsonl"},
		"--interference":    {"--interference", "-0.1"},
		"--cluster":         {"--cluster", filepath.Join(dir, "missing.yaml")},
		"--chaos":           {"--chaos", "kill=lots"},
		"--oversubscribe":   {"--oversubscribe", "1,0.5"},
	}
	for want, args := range cases {
		err := timedCommand("compare", append(args, "--quiet"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("compare %v: error %v, want one naming %s", args, err, want)
		}
	}
	if err := run([]string{"--clock", "fast"}); err == nil || !strings.Contains(err.Error(), "--clock") {
		t.Errorf("run --clock fast: %v", err)
	}
	if err := run([]string{"--hours", "5"}); err == nil || !strings.Contains(err.Error(), "--hours") {
		t.Errorf("run --hours without a virtual clock: %v", err)
	}
}

// captureStdout runs f with os.Stdout going to a file and returns what it printed.
func captureStdout(t *testing.T, f func() error) string {
	t.Helper()
	tmp, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = tmp
	err = f()
	os.Stdout = old
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(tmp.Name())
	return string(b)
}

// tableCells returns the cells of the row labelled label, each made of
// width space-separated words.
func tableCells(t *testing.T, table, label string, width int) []string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), label+" ")
		if !ok {
			continue
		}
		words := strings.Fields(rest)
		var cells []string
		for i := 0; i+width <= len(words); i += width {
			cells = append(cells, strings.Join(words[i:i+width], " "))
		}
		return cells
	}
	t.Fatalf("no row %q in\n%s", label, table)
	return nil
}

// TestCompareSeedsAverages: with --seeds each cell is the mean over the
// seeds' runs, and each run has its own files.
func TestCompareSeedsAverages(t *testing.T) {
	dir := t.TempDir()
	table := captureStdout(t, func() error {
		return timedCommand("compare", []string{"--hours", "6", "--policies", "spread", "--seeds", "4-5", "--out", dir, "--quiet"})
	})
	for _, f := range []string{"jobs-spread-4.csv", "jobs-spread-5.csv", "series-spread-4.csv", "series-spread-5.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	var summary struct{ Runs []sim.SummaryJSON }
	b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err := json.Unmarshal(b, &summary); err != nil || len(summary.Runs) != 2 {
		t.Fatalf("summary.json: %v\n%s", err, b)
	}
	want := (summary.Runs[0].BusyGPUHours + summary.Runs[1].BusyGPUHours) / 2
	var got float64
	fmt.Sscan(tableCells(t, table, "busy GPU-hours", 1)[0], &got)
	if math.Abs(got-want) > 0.051 || summary.Runs[0].BusyGPUHours == summary.Runs[1].BusyGPUHours {
		t.Fatalf("busy GPU-hours cell %v, want the mean %v of two different seeds %v and %v", got, want,
			summary.Runs[0].BusyGPUHours, summary.Runs[1].BusyGPUHours)
	}
}

// TestCompareShowsWhatCapacityChanges (issue 24 item 3): with several
// oversubscription ratios each capacity-bound policy runs once per ratio,
// as its own column, and a paper policy once; at ratio 1 binpack keeps its
// jobs within each GPU's compute (slowdown only from interference, which
// --interference 0 turns off), past it they slow down.
func TestCompareShowsWhatCapacityChanges(t *testing.T) {
	dir := t.TempDir()
	table := captureStdout(t, func() error {
		return timedCommand("compare", []string{"--hours", "12", "--policies", "binpack,best-fit", "--oversubscribe", "1,inf",
			"--interference", "0", "--seed", "2", "--out", dir, "--quiet"})
	})
	if cols := tableCells(t, table, "policy", 1); !slices.Equal(cols, []string{"binpack-x1", "binpack-xinf", "best-fit"}) {
		t.Fatalf("columns %v, want binpack-x1 binpack-xinf best-fit", cols)
	}
	for _, f := range []string{"jobs-binpack-x1.csv", "jobs-binpack-xinf.csv", "jobs-best-fit.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	slow := tableCells(t, table, "co-location slowdown mean/p95", 2)
	var bounded, unbounded float64
	fmt.Sscan(slow[0], &bounded)
	fmt.Sscan(slow[1], &unbounded)
	if bounded != 1 || unbounded <= 1.05 {
		t.Fatalf("co-location slowdown %v: want 1 within capacity and more past it", slow)
	}
}
