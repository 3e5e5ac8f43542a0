// Package simtest owns deterministic simulation testing of the whole
// cluster: each seed draws a cluster shape (1–64 GPUs of mixed models), a
// workload (the generated mix with gangs, CPU-only and GPU-sharing jobs), a
// policy and queue order and a fault schedule, runs it on the virtual
// clock with the same actors and bus as a live cluster, and feeds every
// event in-process to the invariant checker of `observer check`. A seed
// that breaks an invariant replays exactly (`cluster simtest --seeds N`).
package simtest
