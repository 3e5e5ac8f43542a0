// Package gavel reproduces the simulator of the Gavel paper
// ("Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
// Workloads", OSDI'20; the artifact stanford-futuredata/gavel) as its data
// folder's MODEL.md specifies it, per job: jobs of 26 measured types whose
// speed on V100, P100 and K80 GPUs — alone, on 1 to 8 GPUs, or packed in
// pairs on the same GPUs — comes from the artifact's throughput table
// (model.ThroughputTable); CPython's generators (internal/pyrand) drawing
// the same jobs and arrivals as the reference; 360-second rounds in which
// a policy's allocation becomes priorities, deficits and a greedy
// per-round assignment; and the solver-free policies FIFO (with its
// quirk), Isolated, AlloX (scipy's assignment solver, tie for tie) and
// Gandiva (random packing). It owns the workload generator (Generator),
// the round mechanism and main loop (Run), the policies (Policy,
// NewPolicy), the assignment solver (assign), and reading and writing the
// reference runs' per-job files (ReadRun, WriteCSV).
//
// Everything is plain functions over values: no goroutines, no bus, no
// clock. Section numbers in comments (§5.2) are MODEL.md's.
package gavel
