// Package pollux reproduces the cluster simulator of the Pollux paper
// (OSDI'21 artifact, petuum/adaptdl osdi21-artifact, simulator/) as its
// data folder's MODEL.md specifies it: distributed training jobs whose
// replicas span nodes, whose speed comes from the application's measured
// step and sync times for their placement and whose progress is counted in
// statistically efficient steps, run in 60-second rounds under the
// Tiresias+TunedJobs and Optimus+Oracle+TunedJobs policies. It owns the
// application model (Load, App: throughput, gradient statistics, the
// configuration rule, goodput), the job state and its advance by an
// interval (Job), the policies (Tiresias, Optimus; Pollux with its elastic
// jobs, fitted throughput model and seeded genetic search) and the offline
// main loop (Run); step times of shapes outside MODEL.md's Appendix B are
// interpolated (pathb.go) and the jobs that used them marked approximate.
// Everything is plain functions over values: no goroutines, no bus, no
// clock; Pollux's randomness comes from its seed. Section numbers in
// comments (§4.5) are MODEL.md's.
package pollux
