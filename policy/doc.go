// Package policy owns the scheduler's pure decisions and the plug-in
// framework they are extensions of (framework.go: one base, Plugin; one
// registry, Register/Lookup/Names; one result, Status; profile.go: the
// extensions in force and the order the points run in). Its decisions:
// placement policies (binpack, spread, first-fit; the FGD paper's random,
// dotprod, gpu-clustering, gpu-packing, best-fit and fgd),
// the fragmentation measure (F_n(m), F(M), typical workloads), queue order,
// the head-of-line hold that keeps a big job from starving, preemption
// victim choice and pending reasons. Everything is a plain function over a
// Cluster snapshot: no goroutines, no bus, no clock. The scheduler actor
// and the offline replay call these functions; tests call them directly
// with tables.
//
// A placement is two stages, as in the Kubernetes scheduler framework: a
// filter (does the job fit this GPU and node at all?) and a ranking of what
// passed, either per GPU (GPURanker) or per node (NodeScorer). Ties are
// broken deterministically: by GPU order, or by each node's Rank. See
// docs/POLICIES.md.
package policy
