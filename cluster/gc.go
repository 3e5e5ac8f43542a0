package cluster

import (
	"os"
	"runtime/debug"
)

// The garbage collector's target for a cluster process. Go's default
// (GOGC=100) collects each time the heap has grown by as much as is live.
// A small cluster's live heap is small (the reference cluster after 1,600
// placements: 6.6 MiB with no journal, 27 MiB with --memory, whose event
// stream is in it) while every placement allocates its messages (about
// 77 KiB for a placement and its cancel, in an allocation profile of the
// placement benchmark), so at the default the collector's background
// work alone took 14–16 % of the process's CPU in a CPU profile of that
// benchmark. Four times the live heap between collections
// (smallClusterGCPercent) placed more jobs per second and about doubled
// simtest's peak RSS (the figures: docs/PERFORMANCE.md). A large
// cluster's live heap is its GPU actors (9.8 KiB each: 960 MiB at 100,000
// GPUs, bench section 4); four times that would be gigabytes, so above
// smallClusterGPUs the default stays.
const (
	// smallClusterGCPercent is the GC target (GOGC) of a small cluster.
	smallClusterGCPercent = 400
	// smallClusterGPUs is the largest cluster given it: 10,000 GPUs
	// hold about 100 MiB live (bench section 4), 500 MiB at the target.
	smallClusterGPUs = 10000
	// defaultGCPercent is Go's own default.
	defaultGCPercent = 100
)

// GCPercent is the garbage collector target (as GOGC) for a process that
// runs a cluster of gpus GPUs (the whole cluster's, also for a process
// that runs part of it).
func GCPercent(gpus int) int {
	if gpus <= smallClusterGPUs {
		return smallClusterGCPercent
	}
	return defaultGCPercent
}

// TuneGC sets the process's garbage collector target to GCPercent(gpus),
// unless the GOGC environment variable is set (a person's choice wins),
// and returns a function that puts back the target it found. The target
// is the whole process's: a process that runs clusters of different sizes
// one after another (cluster bench) sets it for each.
func TuneGC(gpus int) (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	previous := debug.SetGCPercent(GCPercent(gpus))
	return func() { debug.SetGCPercent(previous) }
}
