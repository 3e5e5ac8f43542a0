package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestASingleReplayChecksItsOutputBeforeRunning: a folder, or a file in a
// folder that does not exist, is refused at once with what to do instead.
func TestASingleReplayChecksItsOutputBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	for path, says := range map[string]string{
		dir + "/":                         "a single run writes one CSV file",
		dir:                               "is a folder",
		filepath.Join(dir, "no", "x.csv"): "does not exist",
	} {
		err := checkOutFile(path)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("--out %s: %v, want it to say %q", path, err, says)
		}
	}
	if err := checkOutFile(filepath.Join(dir, "fgd42.csv")); err != nil {
		t.Fatalf("a file in an existing folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "fgd42.csv")); err == nil {
		t.Fatal("checking wrote the file")
	}
}
