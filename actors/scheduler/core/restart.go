package core

import (
	"slices"
	"time"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
)

// restart is what a scheduler started on a predecessor's work still owes
// it: the jobs the predecessor ran, until each is re-learned from its
// GPUs or found lost (journal.go: settleJournaled; liveness.go:
// settleRelearned), the news of what the journal restored and the
// submissions the predecessor left unanswered. A scheduler that started
// afresh owes nothing: its maps stay empty.
type restart struct {
	// started is when this scheduler was made (wall time): its warm-up,
	// the restart's hold on placements and its grace count from it.
	started time.Time
	// lease is the GPUs' lease (DefaultLease when not configured): the
	// warm-up and the hold on placements last one, the grace two.
	lease time.Duration
	// warms says this scheduler restarted (Config.Since): it warms up.
	warms bool
	// inherited holds the predecessor's running jobs not accounted for
	// yet, with the placement each ran in.
	inherited map[string]string
	// journaled are the records of jobs the journal says ran, until a GPU
	// accounts for them or shows it no longer runs them.
	journaled map[string]*durable.Record
	// relearning counts the running jobs being read back from their GPUs
	// (job.relearning): an upper bound until settleRelearned counts again.
	relearning int
	// restoredNews are the job.restored events restore left for the
	// first step.
	restoredNews []events.JobInfo
	// unanswered are the predecessor's unanswered submissions, answered
	// at the first step (Config.Unanswered).
	unanswered []Unanswered
}

// owes says whether jobs the predecessor ran are still to be accounted
// for.
func (r *restart) owes() bool { return len(r.journaled)+r.relearning > 0 }

// catchingUp says whether a GPU read in full may still account for the
// predecessor's work: a job it ran and no GPU has accounted for (the
// journal's records are among those), or a gang being read back.
func (r *restart) catchingUp() bool { return len(r.inherited) > 0 || r.relearning > 0 }

// since is how long this scheduler has run at wall time now.
func (r *restart) since(now time.Time) time.Duration { return now.Sub(r.started) }

// grace is how long after its start a restarted scheduler waits for a
// heartbeat to name a GPU the journal says ran a job: two leases.
func (r *restart) grace() time.Duration { return 2 * r.lease }

// graceOver says whether the restart's grace is over at wall time now: a
// GPU no heartbeat has named by then counts as gone.
func (r *restart) graceOver(now time.Time) bool { return r.since(now) > r.grace() }

// warmUpEnds is when a restarted scheduler's warm-up ends (wall time);
// false for a scheduler that did not restart.
func (r *restart) warmUpEnds() (time.Time, bool) {
	if !r.warms {
		return time.Time{}, false
	}
	return r.started.Add(r.lease), true
}

// relearn marks j as being read back from its GPUs (from: the GPUs the
// journal says it ran on).
func (r *restart) relearn(j *job, from []string) {
	r.relearning++ // an upper bound until settleRelearned counts again
	j.relearning, j.relearnFrom = true, slices.Clone(from)
}
