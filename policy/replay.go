package policy

import (
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// ReplayedRounds is a reproduced simulator's round loop that the live
// scheduler steps in place of its own queue (core.ReplayConfig): the
// simulator decides, round by round, which job runs on which GPUs and
// when each completes; the cluster's GPU actors run what it decides, and
// a live run's completion times are the offline run's. gavel.Live (the
// Gavel artifact's rounds) and pal.Live (the PAL artifact's) are the two.
//
// Jobs are numbered in submission order (0, 1, 2…), which must be the
// simulator's arrival order. Times are the run's seconds, as floats.
type ReplayedRounds interface {
	// Accept checks that a submitted job is one the simulator models; a
	// field error names what it cannot take.
	Accept(spec *events.Job) *model.FieldError
	// Arrive gives the simulator job id, submitted at arrivalS.
	Arrive(id int, arrivalS float64, spec *events.Job) error
	// RoundEnded ends the round in progress (or the wait before the
	// first): it accounts what ran and returns the simulator's now; the
	// earliest pending arrival is nextArrivalS (+Inf: none).
	RoundEnded(nextArrivalS float64) (nowS float64)
	// Completed are the jobs the last RoundEnded completed.
	Completed() []int
	// Done reports whether the run is over (every measured job done).
	Done() bool
	// Schedule decides the next round's tasks (Tasks) at the simulator's
	// now, with the arrivals given so far.
	Schedule() error
	// Tasks are the round in progress: what Schedule last decided.
	Tasks() []ReplayedTask
	// NextRoundS is when the next round is decided, given the earliest
	// pending arrival (+Inf: none); +Inf when no round is due until a job
	// arrives.
	NextRoundS(nextArrivalS float64) float64
	// Progress is the work job id has done (its steps or iterations).
	Progress(id int) float64
	// End is when job id completed, in seconds.
	End(id int) float64
}

// ReplayedTask is one task of a replayed round: jobs (one, or a packed
// pair) running on GPUs (indices into the run's GPU list) until FinishS.
type ReplayedTask struct {
	Jobs    []int
	GPUs    []int
	FinishS float64
}
