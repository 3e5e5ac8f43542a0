package cluster

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestTuneGCFollowsTheClusterAndGOGC checks the rule (a small cluster
// gets the larger target, a large one Go's default), that TuneGC sets it
// and puts back what it found, and that GOGC, when set, wins.
func TestTuneGCFollowsTheClusterAndGOGC(t *testing.T) {
	if got := GCPercent(8); got != smallClusterGCPercent {
		t.Fatalf("GCPercent(8) = %d, want %d", got, smallClusterGCPercent)
	}
	if got := GCPercent(100000); got != defaultGCPercent {
		t.Fatalf("GCPercent(100000) = %d, want %d", got, defaultGCPercent)
	}
	t.Setenv("GOGC", "") // cleared below: LookupEnv must not find it
	before := debug.SetGCPercent(123)
	defer debug.SetGCPercent(before)
	restore := TuneGC(8)
	if got := debug.SetGCPercent(123); got != 123 {
		t.Fatalf("with GOGC set, TuneGC changed the target to %d", got)
	}
	restore()
	os.Unsetenv("GOGC") // t.Setenv puts back what was there
	restore = TuneGC(8)
	if got := debug.SetGCPercent(smallClusterGCPercent); got != smallClusterGCPercent {
		t.Fatalf("TuneGC(8) set %d, want %d", got, smallClusterGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(123); got != 123 {
		t.Fatalf("restore put back %d, want 123", got)
	}
}
