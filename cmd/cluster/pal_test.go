package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/internal/tracedir"
)

// TestPALReplay (issue 44): `cluster replay --pal DIR --offline` writes
// NAME.jobs.csv byte for byte the reference run's and NAME.summary.json,
// and with --compare says how many JCTs equal the reference's; bad flags
// get errors naming them.
func TestPALReplay(t *testing.T) {
	dir := tracedir.PAL(t)
	out := t.TempDir()
	table := captureStdout(t, func() error {
		return palCommand([]string{"--pal", dir, "--policy", "pal,PMFirst", "--workload", "8", "--track", "18-48", "--offline", "--out", out, "--compare"})
	})
	if !strings.Contains(table, "w8_fifo_PAL_t18-48") || !strings.Contains(table, "62 of 62 jobs' JCTs equal") {
		t.Fatalf("the comparison does not show both runs with every JCT equal:\n%s", table)
	}
	for name, ref := range map[string]string{"w8_fifo_PAL_t18-48": "w8_fifo_PAL", "w8_fifo_PMFirst_t18-48": "w8_fifo_PMFirst"} {
		got, err := os.ReadFile(filepath.Join(out, name+".jobs.csv"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, "runs", ref+".jobs.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s.jobs.csv is not the reference's %s.jobs.csv byte for byte", name, ref)
		}
		var sum struct {
			Placement string  `json:"placement"`
			Avg       float64 `json:"avg_jct_s"`
		}
		raw, err := os.ReadFile(filepath.Join(out, name+".summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &sum); err != nil || sum.Avg <= 0 || sum.Placement == "" {
			t.Errorf("%s.summary.json: %v %+v", name, err, sum)
		}
	}
	// The same runs live: the same CSVs, byte for byte.
	liveOut := t.TempDir()
	table = captureStdout(t, func() error {
		return palCommand([]string{"--pal", dir, "--policy", "pal,PMFirst", "--workload", "8", "--track", "18-48", "--out", liveOut, "--compare"})
	})
	if !strings.Contains(table, "62 of 62 jobs' JCTs equal") {
		t.Fatalf("the live runs' JCTs are not all the reference's:\n%s", table)
	}
	for _, name := range []string{"w8_fifo_PAL_t18-48", "w8_fifo_PMFirst_t18-48"} {
		a, errA := os.ReadFile(filepath.Join(out, name+".jobs.csv"))
		b, errB := os.ReadFile(filepath.Join(liveOut, name+".jobs.csv"))
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Errorf("%s.jobs.csv live is not the offline one byte for byte (%v %v)", name, errA, errB)
		}
	}
	for want, args := range map[string][]string{
		"--policy":    {"--pal", dir, "--policy", "tetris", "--offline"},
		"--queue":     {"--pal", dir, "--queue", "edf", "--offline"},
		"--workload":  {"--pal", dir, "--workload", "x", "--offline"},
		"--locality":  {"--pal", dir, "--locality", "0.5", "--offline"},
		"--track":     {"--pal", dir, "--track", "59", "--offline"},
		"--pal":       {"--pal", filepath.Join(dir, "nowhere"), "--offline"},
		"workload-99": {"--pal", dir, "--workload", "99", "--offline"},
	} {
		if err := palCommand(args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want one naming %s", args, err, want)
		}
	}
}

// TestPALCompare (issue 44): `cluster compare --pal` normalises each
// placement's average JCT to the paper's "Packed-Sticky" (the artifact's
// Default-Packed-NS) and writes the sweep over the locality penalty.
func TestPALCompare(t *testing.T) {
	dir := tracedir.PAL(t)
	out := t.TempDir()
	table := captureStdout(t, func() error {
		return palCompareCommand([]string{"--pal", dir, "--policy", "pal,pm-first", "--workload", "8", "--locality", "1,3", "--out", out})
	})
	if !strings.Contains(table, "geometric mean") || !strings.Contains(table, "packed-nonsticky") {
		t.Fatalf("no geometric means, or the baseline not run:\n%s", table)
	}
	f, err := os.Open(filepath.Join(out, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// 2 localities × 3 policies under the header; the baseline is 1 at
	// each locality, and on workload 8 PAL and PM-First beat it by far.
	if len(rows) != 7 || strings.Join(rows[0], ",") != "locality_penalty,policy,geomean_avg_jct_normalised" {
		t.Fatalf("sweep.csv: %v", rows)
	}
	for _, r := range rows[1:] {
		switch r[1] {
		case "packed-nonsticky":
			if r[2] != "1" {
				t.Errorf("the baseline normalised to %s, not 1", r[2])
			}
		case "pal", "pm-first":
			if v, err := strconv.ParseFloat(r[2], 64); err != nil || v >= 0.5 {
				t.Errorf("%s at locality %s: %s of the baseline's average JCT, expected under 0.5 on workload 8", r[1], r[0], r[2])
			}
		}
	}
}
