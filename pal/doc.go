// Package pal reproduces the Sia-Philly simulation of the PAL paper's
// artifact ("PAL: A Variability-Aware Policy for Scheduling ML Workloads
// in GPU Clusters", SC'24; hal-uw/blox-pal, built on Blox) as its data
// folder's MODEL.md specifies it, per job: a 16 × 4 GPU cluster whose GPUs
// each run every application class at their own measured pace (a
// multiplier drawn from per-run measurements with CPython's generator),
// a gang paced by its slowest GPU and slowed by a locality penalty when
// it spans nodes (model.GangSlowdown), 360-second rounds with free
// preemption, the queue orders FIFO, LAS and SRTF, and the placement
// policies PM-First, PAL, Packed and Random (sticky and not).
//
// It owns reading the artifact's data (Data, ReadTrace, ReadProfile), the
// variability profile (DrawProfile) and its clustering into performance
// levels (Levels), the GPU choosers and placement frames, the round
// mechanism (Driver, Run), and the reference runs' files (ReadRun,
// ReadConfigs, WriteCSV).
//
// Everything is plain functions over values: no goroutines, no bus, no
// clock. Section numbers in comments (§5.3) are MODEL.md's.
package pal
