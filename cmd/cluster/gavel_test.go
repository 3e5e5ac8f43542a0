package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/internal/tracedir"
)

// TestGavelReplay (issue 40): `cluster replay --gavel DIR --offline`
// writes NAME.csv in the reference runs' columns, byte for byte the
// reference's for a run whose draws are exact, and with --compare says
// how many JCTs equal the reference's.
func TestGavelReplay(t *testing.T) {
	dir := tracedir.Gavel(t)
	out := t.TempDir()
	table := captureStdout(t, func() error {
		return gavelCommand([]string{"--gavel", dir, "--policy", "fifo,gandiva", "--static", "60", "--cluster", "8:8:8", "--seed", "1",
			"--offline", "--out", out, "--compare"})
	})
	if !strings.Contains(table, "static_fifo_c8-8-8_n60_seed1") || !strings.Contains(table, "120 of 120 jobs' JCTs equal") {
		t.Fatalf("the comparison does not show both runs with every JCT equal:\n%s", table)
	}
	sameAsReference(t, dir, out, "static_fifo_c8-8-8_n60_seed1", "static_gandiva_c8-8-8_n60_seed1")
	for want, args := range map[string][]string{
		"--policy":    {"--gavel", dir, "--policy", "lottery", "--static", "60", "--offline"},
		"--cluster":   {"--gavel", dir, "--cluster", "8:8", "--static", "60", "--offline"},
		"--window":    {"--gavel", dir, "--lam", "4800", "--window", "150-50", "--offline"},
		"--static N":  {"--gavel", dir, "--offline"},
		"--seed":      {"--gavel", dir, "--static", "60", "--seed", "x", "--offline"},
		"--multi-gpu": {"--gavel", dir, "--policy", "allox", "--static", "60", "--multi-gpu", "--offline"},
		"--gavel":     {"--gavel", filepath.Join(dir, "nowhere"), "--static", "60", "--offline"},
	} {
		if err := gavelCommand(args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want one naming %s", args, err, want)
		}
	}
}

// TestGavelReplayLive (issue 40): without --offline the runs go through
// the live cluster and write the same CSVs, byte for byte, as --offline:
// the reference's own for FIFO and Gandiva on this configuration.
func TestGavelReplayLive(t *testing.T) {
	dir := tracedir.Gavel(t)
	out := t.TempDir()
	table := captureStdout(t, func() error {
		return gavelCommand([]string{"--gavel", dir, "--policy", "fifo,gandiva", "--static", "60", "--cluster", "8:8:8", "--seed", "1",
			"--out", out, "--compare"})
	})
	if !strings.Contains(table, "120 of 120 jobs' JCTs equal") {
		t.Fatalf("the live runs' JCTs are not all the reference's:\n%s", table)
	}
	sameAsReference(t, dir, out, "static_fifo_c8-8-8_n60_seed1", "static_gandiva_c8-8-8_n60_seed1")
}

// sameAsReference checks that out holds NAME.csv, byte for byte the
// reference run's in dir/runs, and NAME.json, for each name.
func sameAsReference(t *testing.T, dir, out string, names ...string) {
	t.Helper()
	for _, name := range names {
		got, err := os.ReadFile(filepath.Join(out, name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, "runs", name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s.csv differs from the reference's", name)
		}
		if _, err := os.Stat(filepath.Join(out, name+".json")); err != nil {
			t.Errorf("%s: no summary: %v", name, err)
		}
	}
}

// TestGavelCompare (issue 40): `cluster compare --gavel` prints one
// column per policy with JCT, makespan, utilisation and ρ (Isolated's ρ
// is 1 for every job, by definition; FIFO's is not), writes each run's
// jobs with their ρ, and observer report draws the folder.
func TestGavelCompare(t *testing.T) {
	dir := tracedir.Gavel(t)
	out := t.TempDir()
	table := captureStdout(t, func() error {
		return gavelCompareCommand([]string{"--gavel", dir, "--policies", "fifo,isolated,max_min_fairness_perf", "--static", "20",
			"--cluster", "4:4:4", "--seeds", "0-1", "--out", out})
	})
	for _, want := range []string{"max_min_fairness_perf", "makespan", "ρ p90", "jobs with ρ > 1"} {
		if !strings.Contains(table, want) {
			t.Fatalf("the table lacks %q:\n%s", want, table)
		}
	}
	iso, err := os.ReadFile(filepath.Join(out, "gavel-isolated-1.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(iso)), "\n")
	if len(lines) != 21 || lines[0] != "job_id,submit_s,jct_s,job_type,scale_factor,rho" {
		t.Fatalf("gavel-isolated-1.csv: %d lines, header %q", len(lines), lines[0])
	}
	for _, l := range lines[1:] {
		if !strings.HasSuffix(l, ",1") {
			t.Fatalf("Isolated's ρ against itself is not 1: %s", l)
		}
	}
	fifo, err := os.ReadFile(filepath.Join(out, "gavel-fifo-0.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(fifo), ",1\n") == 20 {
		t.Fatal("FIFO's ρ is 1 for every job: ρ is not computed against Isolated")
	}
	js := captureStdout(t, func() error {
		return gavelCompareCommand([]string{"--gavel", dir, "--policies", "isolated", "--static", "10", "--cluster", "4:4:4", "--json"})
	})
	var cols []map[string]any
	if err := json.Unmarshal([]byte(js), &cols); err != nil || len(cols) != 1 || cols[0]["policy"] != "isolated" || cols[0]["rho_p90"] != 1.0 {
		t.Fatalf("--json: %v %v", err, js)
	}
	if err := gavelCompareCommand([]string{"--gavel", dir, "--policies", "lottery", "--static", "20"}); err == nil || !strings.Contains(err.Error(), "--policies") {
		t.Errorf("an unknown policy: error %v, want one naming --policies", err)
	}
}

// TestGavelCompareSweep (issue 40): --lam with several rates runs each,
// writes each rate's files under lam-S/ and sweep.csv with a row per
// rate and policy, and prints the JCT by rate with each policy's ratio
// to the last one named.
func TestGavelCompareSweep(t *testing.T) {
	dir := tracedir.Gavel(t)
	out := t.TempDir()
	table := captureStdout(t, func() error {
		return gavelCompareCommand([]string{"--gavel", dir, "--policies", "fifo,gandiva", "--lam", "14400,7200",
			"--window", "5-15", "--cluster", "8:8:8", "--out", out})
	})
	if !strings.Contains(table, "fifo ÷ gandiva") || !strings.Contains(table, "jobs/h") {
		t.Fatalf("no sweep table:\n%s", table)
	}
	sweep, err := os.ReadFile(filepath.Join(out, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(sweep)), "\n"); len(lines) != 5 || !strings.HasPrefix(lines[1], "14400,0.25,fifo,1,") {
		t.Fatalf("sweep.csv:\n%s", sweep)
	}
	if _, err := os.Stat(filepath.Join(out, "lam-7200", "gavel-gandiva-0.csv")); err != nil {
		t.Fatal(err)
	}
	if err := gavelCompareCommand([]string{"--gavel", dir, "--lam", "7200,soon", "--window", "5-15"}); err == nil || !strings.Contains(err.Error(), "--lam") {
		t.Errorf("a bad rate: error %v, want one naming --lam", err)
	}
}

// TestAnInterruptedSweepTablesOnlyWhatFinished: a rate none of whose runs
// finished has no row, and a policy of a rate that did not finish shows a
// dash, not 0.00h and NaN×.
func TestAnInterruptedSweepTablesOnlyWhatFinished(t *testing.T) {
	all := []gavelTable{
		{LamS: 654.5, JobsPerHour: 5.5, Columns: []gavelColumn{{Policy: "gandiva", JCTMeanS: 7200}, {Policy: "max_min_fairness_perf", JCTMeanS: 3600}}},
		{LamS: 600, JobsPerHour: 6},
	}
	var b strings.Builder
	writeGavelSweep(&b, all, []string{"gandiva", "max_min_fairness", "max_min_fairness_perf"})
	out := b.String()
	if strings.Contains(out, "NaN") || strings.Contains(out, "0.00h") || strings.Contains(out, "Inf") {
		t.Fatalf("the sweep shows runs that never finished:\n%s", out)
	}
	if !strings.Contains(out, "2.00×") || !strings.Contains(out, "–") {
		t.Fatalf("want gandiva at 2.00× and a dash for max_min_fairness:\n%s", out)
	}
	if lines := strings.Count(strings.TrimSpace(out), "\n"); lines != 1 {
		t.Fatalf("%d rows, want the header and 5.5 jobs/h only:\n%s", lines, out)
	}
}

// TestGavelCompareBesidePlacementPolicies (issue 40): --placements runs
// the same trace live under the scheduler's own placement policies, a
// column each beside Gavel's, with ρ against the same Isolated run and a
// CSV each; unknown names are refused naming the flag.
func TestGavelCompareBesidePlacementPolicies(t *testing.T) {
	dir := tracedir.Gavel(t)
	out := t.TempDir()
	js := captureStdout(t, func() error {
		return gavelCompareCommand([]string{"--gavel", dir, "--policies", "gandiva", "--placements", "binpack,spread", "--static", "20",
			"--cluster", "4:4:4", "--out", out, "--json"})
	})
	var cols []map[string]any
	if err := json.Unmarshal([]byte(js), &cols); err != nil {
		t.Fatalf("--json: %v %s", err, js)
	}
	var got []string
	for _, c := range cols {
		got = append(got, c["policy"].(string))
		if c["jobs"] != 20.0 || c["rho_p90"] == nil {
			t.Fatalf("column %v: want 20 measured jobs and ρ against Isolated", c)
		}
	}
	if strings.Join(got, ",") != "gandiva,binpack,spread" {
		t.Fatalf("columns %v, want gandiva, binpack, spread", got)
	}
	if _, err := os.Stat(filepath.Join(out, "gavel-binpack-0.csv")); err != nil {
		t.Fatal(err)
	}
	for args, flag := range map[string]string{"--placements=lottery": "--placements", "--queue=lottery": "--queue"} {
		err := gavelCompareCommand([]string{"--gavel", dir, "--policies", "gandiva", "--placements", "binpack", args, "--static", "20"})
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: %v, want an error naming %s", args, err, flag)
		}
	}
}
