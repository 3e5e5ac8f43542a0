package gavel

import (
	"math"
	"slices"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
)

// Live is a Driver as the live scheduler steps it (policy.ReplayedRounds;
// `cluster replay --gavel` without --offline): each typed job submitted is
// an arrival, each round ends at its tasks' latest finish, or at the next
// arrival when it had none.
type Live struct {
	d    *Driver
	data *Data
}

// NewLive is d, stepped live, with its data (the job types it knows).
func NewLive(d *Driver, data *Data) *Live { return &Live{d: d, data: data} }

var _ policy.ReplayedRounds = (*Live)(nil)

// template is the index of a job type among the data's templates (−1).
func (l *Live) template(jobType string) int {
	return slices.IndexFunc(l.data.Templates, func(t Template) bool { return t.Name == jobType })
}

// Accept takes typed jobs of Gavel's job types.
func (l *Live) Accept(spec *events.Job) *model.FieldError {
	if l.template(spec.JobType) < 0 {
		return model.Errorf("job_type", "%q is not one of Gavel's job types", spec.JobType)
	}
	return nil
}

// Arrive gives the driver the job (its type, scale factor and steps).
func (l *Live) Arrive(id int, arrivalS float64, spec *events.Job) error {
	return l.d.Arrive(Job{ID: id, Arrival: arrivalS, Template: l.template(spec.JobType), Type: spec.JobType, Scale: spec.GPUs, TotalSteps: spec.Steps})
}

// RoundEnded is Driver.RoundEnded.
func (l *Live) RoundEnded(nextArrivalS float64) float64 { return l.d.RoundEnded(nextArrivalS) }

// Completed is Driver.Completed.
func (l *Live) Completed() []int { return l.d.Completed() }

// Done is Driver.Done.
func (l *Live) Done() bool { return l.d.Done() }

// Schedule is Driver.Schedule.
func (l *Live) Schedule() error { return l.d.Schedule() }

// Progress is Driver.Progress (steps).
func (l *Live) Progress(id int) float64 { return l.d.Progress(id) }

// End is Driver.End.
func (l *Live) End(id int) float64 { return l.d.End(id) }

// Tasks are the round's tasks: each job or packed pair on its GPUs (the
// worker ids) until its steps are done.
func (l *Live) Tasks() []policy.ReplayedTask {
	tasks := l.d.Tasks()
	out := make([]policy.ReplayedTask, len(tasks))
	for i, t := range tasks {
		out[i] = policy.ReplayedTask{Jobs: t.ID.Members(), GPUs: t.GPUs, FinishS: t.Finish}
	}
	return out
}

// NextRoundS is the round's end, its tasks' latest finish, or, when it
// has none, the next arrival.
func (l *Live) NextRoundS(nextArrivalS float64) float64 {
	tasks := l.d.Tasks()
	if len(tasks) == 0 {
		return nextArrivalS
	}
	latest := math.Inf(-1)
	for _, t := range tasks {
		latest = max(latest, t.Finish)
	}
	return latest
}
