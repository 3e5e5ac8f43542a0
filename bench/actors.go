package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/gpusched/gpusched/durable"
)

// ActorsFootprint is what n GPU actors cost in one process.
type ActorsFootprint struct {
	GPUs int
	// StartUp is from Start until the scheduler has heard every GPU and
	// node (the cluster answers).
	StartUp time.Duration
	// PerGPU is the process's live heap and goroutine stacks once ready,
	// less what it held before, per GPU: the GPU actors, their node actors
	// and subscriptions, and the scheduler's view of them.
	PerGPU     int64
	Total      int64
	Goroutines int
	// RSS is the whole process's resident memory once ready (the Go heap
	// not yet returned to the OS, the NATS server, the test or command
	// around it included); 0 where /proc is not there.
	RSS int64
}

// rss reads the process's resident set size from /proc/self/status.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

// Footprint starts an idle cluster of n A100-80GB GPUs (8 per node, no
// store) and measures its start-up and memory.
func Footprint(ctx context.Context, n int) (ActorsFootprint, error) {
	f := ActorsFootprint{GPUs: n}
	live := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc + m.StackInuse)
	}
	before := live()
	g0 := runtime.NumGoroutine()
	start := time.Now()
	c, err := StartCluster(ctx, ClusterOptions{GPUs: fmt.Sprintf("%dxA100-80GB", n), Policy: "binpack", Store: durable.None})
	if err != nil {
		return f, err
	}
	defer c.Stop()
	f.StartUp = time.Since(start)
	f.Total = live() - before
	f.PerGPU = f.Total / int64(n)
	f.Goroutines = runtime.NumGoroutine() - g0
	f.RSS = rss()
	return f, nil
}
