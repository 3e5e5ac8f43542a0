package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/internal/tracedir"
)

// TestPolluxReplay (issue 20): `cluster replay --pollux DIR --offline`
// writes workload-N_<policy>_<load>.csv (name,submit_s,jct_s,restarts)
// and, with --compare, says how many JCTs equal the published ones.
func TestPolluxReplay(t *testing.T) {
	dir := tracedir.Pollux(t)
	out := t.TempDir()
	table := captureStdout(t, func() error {
		return polluxCommand([]string{"--pollux", dir, "--policy", "optimus", "--load", "1.0", "--workload", "6", "--offline", "--out", out, "--compare"})
	})
	if !strings.Contains(table, "5301.875") || !strings.Contains(table, "160/160") {
		t.Fatalf("the comparison does not show workload 6's 5301.875 s and 160 of 160 equal:\n%s", table)
	}
	b, err := os.ReadFile(filepath.Join(out, "workload-6_optimus_1.0.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 161 || lines[0] != "name,submit_s,jct_s,restarts" || lines[1] != "cifar10-0,53,902,0" {
		t.Fatalf("CSV: %d lines, starting %q %q", len(lines), lines[0], lines[1])
	}
	for want, args := range map[string][]string{
		"--load":    {"--pollux", dir, "--load", "3", "--offline"},
		"--policy":  {"--pollux", dir, "--policy", "lottery", "--offline"},
		"--seeds":   {"--pollux", dir, "--policy", "tiresias", "--seeds", "1-3", "--offline"},
		"--pollux":  {"--pollux", filepath.Join(dir, "nowhere"), "--offline"},
		"--workers": {"--pollux", dir, "--workers", "-2", "--offline"},
	} {
		if err := polluxCommand(args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want one naming %s", args, err, want)
		}
	}
}

// TestPolluxLiveReplay (issue 20): without --offline the command runs the
// workload through the live cluster, and its CSV is the offline run's,
// byte for byte.
func TestPolluxLiveReplay(t *testing.T) {
	dir := tracedir.Pollux(t)
	live, offline := t.TempDir(), t.TempDir()
	table := captureStdout(t, func() error {
		return polluxCommand([]string{"--pollux", dir, "--policy", "tiresias", "--load", "0.5", "--workload", "8", "--out", live, "--compare"})
	})
	if !strings.Contains(table, "80/80") {
		t.Fatalf("the live run's comparison does not show 80 of 80 equal:\n%s", table)
	}
	captureStdout(t, func() error {
		return polluxCommand([]string{"--pollux", dir, "--policy", "tiresias", "--load", "0.5", "--workload", "8", "--offline", "--out", offline})
	})
	a, err := os.ReadFile(filepath.Join(live, "workload-8_tiresias_0.5.csv"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(offline, "workload-8_tiresias_0.5.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) || len(a) == 0 {
		t.Fatalf("live CSV (%d bytes) differs from the offline one (%d bytes)", len(a), len(b))
	}
}

// TestPolluxPolicyReplay: --policy pollux on a small folder laid out like
// the artifact's (its traces and MODEL.md, one 12-job workload): with two
// seeds it writes one CSV per seed, every job completed, and the same
// seed again writes the same file.
func TestPolluxPolicyReplay(t *testing.T) {
	data := tracedir.Pollux(t)
	dir := t.TempDir()
	for _, name := range []string{"traces", "MODEL.md"} {
		if err := os.Symlink(filepath.Join(data, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(data, "workloads", "workload-6.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.MkdirAll(filepath.Join(dir, "workloads"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "workloads", "workload-1.csv"), []byte(strings.Join(lines[:13], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	table := captureStdout(t, func() error {
		return polluxCommand([]string{"--pollux", dir, "--policy", "pollux", "--load", "1.0", "--offline", "--seeds", "1-2", "--out", out})
	})
	if !strings.Contains(table, "seed 1") || !strings.Contains(table, "seed 2") {
		t.Fatalf("no line per seed:\n%s", table)
	}
	first, err := os.ReadFile(filepath.Join(out, "workload-1_pollux_1.0_seed-1.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(first)), "\n")
	if len(rows) != 13 || rows[0] != "name,submit_s,jct_s,restarts" {
		t.Fatalf("CSV of seed 1: %d lines, header %q", len(rows), rows[0])
	}
	again := t.TempDir()
	captureStdout(t, func() error {
		return polluxCommand([]string{"--pollux", dir, "--policy", "pollux", "--load", "1.0", "--offline", "--seeds", "1", "--workers", "1", "--out", again})
	})
	if b, err := os.ReadFile(filepath.Join(again, "workload-1_pollux_1.0.csv")); err != nil || string(b) != string(first) {
		t.Fatalf("seed 1 again wrote a different CSV (%v):\n%s\nfirst:\n%s", err, b, first)
	}
}

// TestPolluxCompare (issue 20 item 4): `cluster compare --pollux DIR`
// prints the compare table for the Pollux paper's policies on one of its
// workloads — every job completed, JCT and queueing rows, preemptions —
// and writes a per-job CSV per policy.
func TestPolluxCompare(t *testing.T) {
	dir := tracedir.Pollux(t)
	out := t.TempDir()
	table := captureStdout(t, func() error {
		return polluxCompareCommand([]string{"--pollux", dir, "--load", "0.5", "--workload", "1", "--policies", "tiresias,optimus", "--out", out})
	})
	for _, want := range []string{"tiresias", "optimus", "JCT p50/p95/p99 all", "queueing p50/p95 all", "preemptions"} {
		if !strings.Contains(table, want) {
			t.Fatalf("the table has no %q:\n%s", want, table)
		}
	}
	var completed []string
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "jobs" && f[1] == "completed" {
			completed = f[2:]
		}
	}
	if len(completed) != 2 || completed[0] != "80" || completed[1] != "80" {
		t.Fatalf("jobs completed %v, want 80 for each policy:\n%s", completed, table)
	}
	b, err := os.ReadFile(filepath.Join(out, "jobs-optimus.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(rows) != 81 || rows[0] != "name,application,submit_s,jct_s,queued_s,restarts,preemptions,gpu_seconds,restart_gpu_seconds" {
		t.Fatalf("jobs-optimus.csv: %d lines, header %q", len(rows), rows[0])
	}
	if err := polluxCompareCommand([]string{"--pollux", dir, "--policies", "binpack"}); err == nil || !strings.Contains(err.Error(), "--policies") {
		t.Errorf("--policies binpack: %v, want an error naming --policies", err)
	}
}

// TestPolluxReplayInterruptedKeepsFinishedRuns (issue 45 item 1): a
// replay stopped after its first run (as Ctrl-C stops it) has written
// that run's CSV when it finished, prints the table of what finished and
// says how many of how many runs did.
func TestPolluxReplayInterruptedKeepsFinishedRuns(t *testing.T) {
	dir := tracedir.Pollux(t)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	before := interruptContext
	interruptContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	polluxRunFinished = func(done int) {
		if done == 1 {
			cancel()
		}
	}
	t.Cleanup(func() {
		interruptContext = before
		polluxRunFinished = nil
	})
	var err error
	table := captureStdout(t, func() error {
		err = polluxCommand([]string{"--pollux", dir, "--policy", "tiresias", "--load", "1.0", "--offline", "--out", out, "--compare"})
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "interrupted: 1 of 8 runs finished") {
		t.Fatalf("error %v, want one saying 1 of 8 runs finished", err)
	}
	if !strings.Contains(table, "workload-1 ") {
		t.Fatalf("the table lacks the finished run:\n%s", table)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.csv"))
	if len(files) != 1 || filepath.Base(files[0]) != "workload-1_tiresias_1.0.csv" {
		t.Fatalf("kept %v, want workload-1's CSV alone", files)
	}
}

// TestSeedsAgainstThePublished: with several seeds, --compare says where
// the published average lies against the seeds' range and counts the
// workloads within 5 % on the mean and within 8 % on every seed.
func TestSeedsAgainstThePublished(t *testing.T) {
	for _, c := range []struct {
		published, lo, hi float64
		want              string
	}{{100, 101, 103, "below"}, {104, 101, 103, "above"}, {102, 101, 103, "inside"}, {101, 101, 103, "inside"}} {
		if got := whereInRange(c.published, c.lo, c.hi); got != c.want {
			t.Errorf("published %v, seeds %v..%v: %q, want %q", c.published, c.lo, c.hi, got, c.want)
		}
	}
	if got := seedsOffBy([]float64{95, 108.5, 101}, 100); math.Abs(got-8.5) > 1e-9 {
		t.Errorf("farthest seed %v %% off, want 8.5", got)
	}
	w5, w8 := withinTargets([]float64{-1, 4.9, -5.1, 7}, []float64{3, 8.2, 6, 8})
	if w5 != 2 || w8 != 3 {
		t.Errorf("%d within 5 %% and %d within 8 %%, want 2 and 3", w5, w8)
	}
}

// TestPolluxCompareAsJSON: --json prints the comparison as JSON, each
// workload's mean, the published average and how many JCTs equal it, and
// nothing else on stdout.
func TestPolluxCompareAsJSON(t *testing.T) {
	dir := tracedir.Pollux(t)
	var err error
	out := captureStdout(t, func() error {
		err = polluxCommand([]string{"--pollux", dir, "--policy", "tiresias", "--load", "0.5", "--offline", "--compare", "--json"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got polluxFigures
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not one JSON value: %v\n%s", err, out)
	}
	if got.Policy != "tiresias" || got.Load != "0.5" || len(got.Workloads) != 8 {
		t.Fatalf("policy %q, load %q, %d workloads; want tiresias, 0.5, 8", got.Policy, got.Load, len(got.Workloads))
	}
	for _, w := range got.Workloads {
		if w.Published == nil || *w.Published != w.AvgJCT || w.EqualJCTs != w.Jobs || w.Jobs != 80 {
			t.Errorf("%s: %+v; want every one of 80 JCTs equal and the published average", w.Workload, w)
		}
	}
}
