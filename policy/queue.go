package policy

import (
	"time"

	"github.com/gpusched/gpusched/model"
)

// Queued is what queue order looks at.
type Queued struct {
	Priority model.Priority
	// Submitted is the simulated submit time; Seq the acceptance order, which
	// breaks ties and keeps a preempted job's original place.
	Submitted time.Time
	Seq       uint64
}

// QueueLess orders the queue: higher priority first, then earlier
// submission, then acceptance order.
func QueueLess(a, b Queued) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.Submitted.Equal(b.Submitted) {
		return a.Submitted.Before(b.Submitted)
	}
	return a.Seq < b.Seq
}

// DefaultStarvationAge is how long (simulated) a job may wait while smaller
// jobs behind it backfill; after that it holds GPUs (see Hold).
const DefaultStarvationAge = 30 * time.Minute

// Aged reports whether a job submitted at submitted has waited long enough
// at now to hold GPUs.
func Aged(submitted, now time.Time, limit time.Duration) bool {
	return limit >= 0 && now.Sub(submitted) >= limit
}
