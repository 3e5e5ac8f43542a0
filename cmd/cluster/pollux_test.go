package main

import (
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
		"--offline": {"--pollux", dir},
		"--pollux":  {"--pollux", filepath.Join(dir, "nowhere"), "--offline"},
	} {
		if err := polluxCommand(args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want one naming %s", args, err, want)
		}
	}
}
