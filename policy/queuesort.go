package policy

import (
	"cmp"
	"time"
)

// QueueSort is the queue-order extension point (the Kubernetes scheduling
// framework's QueueSort): it orders the jobs that wait, and the scheduling
// pass takes them in that order (a job that does not fit does not block
// the ones behind it: they backfill until it has waited the starvation
// age). One is in force at a time; `--queue` and sched.strategy
// {"queue":…} choose it. Adding one is a type with these two methods and a
// `Register[QueueSort]` call in an init function (docs/POLICIES.md).
type QueueSort interface {
	Plugin
	// Less reports whether a waits ahead of b. It must be a strict weak
	// order; ties are broken by the caller on acceptance order.
	Less(a, b *Queued) bool
}

// DefaultQueue is the queue order of a scheduler that names none.
const DefaultQueue = "priority"

var _ = DeclarePoint[QueueSort]("queue order", DefaultQueue, nil)

// Compare orders a and b under q for slices.SortFunc and friends: q's
// order, then acceptance order, so that the queue is a total order
// whatever q says (negative: a waits ahead of b).
func Compare(q QueueSort, a, b *Queued) int {
	switch {
	case q.Less(a, b):
		return -1
	case q.Less(b, a):
		return 1
	}
	return cmp.Compare(a.Seq, b.Seq)
}

func init() {
	Register[QueueSort](priorityOrder{})
	Register[QueueSort](fifoOrder{})
	Register[QueueSort](lasOrder{})
	Register[QueueSort](srtfOrder{})
	Register[QueueSort](sjfOrder{})
}

// priorityOrder is the default: higher priority first, then earlier
// submission (a preempted or lost job keeps its original place).
type priorityOrder struct{}

func (priorityOrder) Name() string { return DefaultQueue }
func (priorityOrder) Less(a, b *Queued) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return a.Submitted.Before(b.Submitted)
}

// fifoOrder is submission order, whatever the priority.
type fifoOrder struct{}

func (fifoOrder) Name() string           { return "fifo" }
func (fifoOrder) Less(a, b *Queued) bool { return a.Submitted.Before(b.Submitted) }

// LASThreshold is the attained service, in GPU-seconds, past which the
// "las" order demotes a job to its second queue: 16 GPU-hours, Tiresias's
// threshold as the Pollux artifact configures it (57,600 GPU-seconds;
// ../shared/traces/pollux/MODEL.md §6).
const LASThreshold = 16 * 3600.0

// lasOrder is Tiresias's discretised two-dimensional least-attained-service
// order (Gu et al., NSDI '19): two queues split at LASThreshold GPU-seconds
// of attained service (GPUs × time run); jobs below it first, in
// submission order; then the demoted ones in the order they were demoted
// (the instant their service crossed the threshold). Priority is not
// looked at: attained service replaces it.
type lasOrder struct{}

func (lasOrder) Name() string { return "las" }
func (lasOrder) Less(a, b *Queued) bool {
	qa, qb := a.AttainedGPUS >= LASThreshold, b.AttainedGPUS >= LASThreshold
	if qa != qb {
		return !qa
	}
	if qa {
		da, db := demotion(a), demotion(b)
		if !da.Equal(db) {
			return da.Before(db)
		}
	}
	return a.Submitted.Before(b.Submitted)
}

// demotion is when a job crossed LASThreshold (its submission when not
// known, as for a job restored from a journal that did not record it).
func demotion(q *Queued) time.Time {
	if q.DemotedAt.IsZero() {
		return q.Submitted
	}
	return q.DemotedAt
}

// srtfOrder is shortest remaining time first: the least work left (in
// reference seconds; kept progress counts as done), then submission order.
type srtfOrder struct{}

func (srtfOrder) Name() string { return "srtf" }
func (srtfOrder) Less(a, b *Queued) bool {
	ra, rb := a.WorkS-a.ProgressS, b.WorkS-b.ProgressS
	if ra != rb {
		return ra < rb
	}
	return a.Submitted.Before(b.Submitted)
}

// sjfOrder is shortest job first: the least work in all (reference
// seconds, as submitted), then submission order.
type sjfOrder struct{}

func (sjfOrder) Name() string { return "sjf" }
func (sjfOrder) Less(a, b *Queued) bool {
	if a.WorkS != b.WorkS {
		return a.WorkS < b.WorkS
	}
	return a.Submitted.Before(b.Submitted)
}
