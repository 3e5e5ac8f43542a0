package policy

import (
	"time"

	"github.com/gpusched/gpusched/model"
)

// Queued is what a queue order (QueueSort) looks at: a waiting job.
type Queued struct {
	Priority model.Priority
	// Submitted is the simulated submit time; Seq the acceptance order, which
	// breaks ties and keeps a preempted job's original place.
	Submitted time.Time
	Seq       uint64
	// GPUs is how many GPUs the job takes; WorkS its work in all and
	// ProgressS the part of it done and kept (reference seconds).
	GPUs             int
	WorkS, ProgressS float64
	// AttainedGPUS is the service the job has had: GPU-seconds (simulated)
	// run over all its stints. DemotedAt is when it passed LASThreshold
	// (zero: not yet, or not known).
	AttainedGPUS float64
	DemotedAt    time.Time
}

// DefaultStarvationAge is how long (simulated) a job may wait while smaller
// jobs behind it backfill; after that it holds GPUs (see Hold).
const DefaultStarvationAge = 30 * time.Minute

// Aged reports whether a job submitted at submitted has waited long enough
// at now to hold GPUs.
func Aged(submitted, now time.Time, limit time.Duration) bool {
	return limit >= 0 && now.Sub(submitted) >= limit
}
