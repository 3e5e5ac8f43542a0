// Package scheduler owns the scheduler actor: the job queue, every job's
// state and history, and a view of the cluster built from GPU and node
// events plus its own accepted reservations. It answers the public request
// subjects (job.submit, job.get, job.list, job.cancel, sched.strategy,
// sched.explain, cluster.snapshot) and places jobs by negotiating over the
// bus: reserve at the node actor and every GPU actor a placement touches,
// then commit; any refusal or timeout aborts the rest and the next
// candidate is tried. It never touches GPU state directly. The decisions
// themselves (ranking, queue order, victims, holds, pending reasons) are
// the pure functions of package policy.
package scheduler
