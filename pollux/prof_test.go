package pollux

import (
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
	"time"
)

func TestProfPollux(t *testing.T) {
	dir := os.Getenv("PPDIR")
	if dir == "" {
		t.Skip()
	}
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := ReadWorkload(filepath.Join(LoadFolder(dir, 1), "workload-6.csv"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := NewSeededPolicy("pollux", 1)
	f, _ := os.Create("/tmp/pollux.prof")
	pprof.StartCPUProfile(f)
	start := time.Now()
	res, err := Run(m, specs, Reference, p)
	pprof.StopCPUProfile()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("took %s, %d jobs", time.Since(start), len(res.Jobs))
}
