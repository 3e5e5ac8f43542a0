// Package policy owns the scheduler's pure decisions: placement policies
// (binpack, spread, first-fit, and a registry for more), queue order, the
// head-of-line hold that keeps a big job from starving, preemption victim
// choice and pending reasons. Everything is a plain function over a Cluster
// snapshot: no goroutines, no bus, no clock. The scheduler actor calls these
// functions; tests call them directly with tables.
//
// A placement is two stages, as in the Kubernetes scheduler framework:
// Fits filters (does the job fit this GPU and node at all?) and a Policy
// ranks what passed. Every policy breaks ties deterministically by GPU order.
package policy
