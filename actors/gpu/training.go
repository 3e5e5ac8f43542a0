package gpu

import (
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/pollux"
)

// lookaheadIntervals bounds how far ahead a GPU steps a copy of a training
// job to find when it completes: one interval. A job that does not
// complete within it is looked at again at the interval's end, when the
// job itself has been stepped there. Looking further ahead finds the
// completion sooner but repeats the work at every placement change (a
// copy stepped to the end of a job that Pollux re-places a few intervals
// later); one interval at a time, a GPU steps each interval twice at
// most, the copy's model fits coming from the memo the job's own then
// finds (pollux.FitPerf).
const lookaheadIntervals = 1

// training is a distributed training job's part that this GPU runs
// (events.TrainingPart). The job's model steps in whole intervals from the
// placement's start (MODEL.md §4.5: stepping 30 s twice is not stepping
// 60 s once, floats and rounded epoch ends), so the GPU steps it on that
// grid, lazily, when it looks: at any message, at the end of each
// interval (next) and at doneAt, the second a copy stepped ahead
// completed (the GPU then steps the interval that holds it). Every GPU
// of the job does the same with the same state, so all of them complete
// it at the same second.
//
// One completion is late: a job whose last epoch ended exactly at the end
// of an interval completes in the next one at its very first second
// (MODEL.md's loop decides at that second first, and completes the job
// only if the decision left it placed). Its GPU completes it then in
// simclock.PhaseAfterDecide, after the scheduler's round at that instant
// (which may stop it), and a describe at that instant shows it not done.
type training struct {
	job      *pollux.Job
	interval time.Duration
	seconds  int
	// since is the simulated time the job's state was stepped to (its
	// clock's second); doneAt when it completes if nothing changes, and
	// doneStart when the interval that completes it starts (zero: not
	// within lookaheadIntervals, then next is when to look again).
	since, doneAt, doneStart, next time.Time
}

// newTraining checks a training part against the model this GPU runs
// training jobs on: the application known, the state placed, its steps
// computable (a step time the profile lacks is refused now, not
// discovered later).
func newTraining(m *pollux.Model, name string, p *events.TrainingPart) (*training, *model.FieldError) {
	if m == nil {
		return nil, model.Errorf("job.training", "this GPU runs no training jobs (the cluster was started without a Pollux data folder)")
	}
	if p.IntervalS <= 0 {
		return nil, model.Errorf("job.training.interval_s", "the interval must be a positive number of seconds, got %d", p.IntervalS)
	}
	if len(p.State.Placement) == 0 {
		return nil, model.Errorf("job.training.state.placement", "a training part needs the job's placement (replicas per node)")
	}
	j, err := m.Restore(pollux.SpecOf(name, p.SubmitS, p.Job), p.State)
	if err != nil {
		return nil, model.Errorf("job.training", "%v", err)
	}
	if _, _, _, err := j.Lookahead(p.IntervalS, 1); err != nil {
		return nil, model.Errorf("job.training", "%v", err)
	}
	return &training{job: j, interval: time.Duration(p.IntervalS) * time.Second, seconds: p.IntervalS}, nil
}

// start is the part's commit at now: the job's clock second is now.
func (t *training) start(now time.Time, log *zap.Logger) {
	t.since = now
	t.plan(log)
}

// plan steps a copy ahead to find when the job completes.
func (t *training) plan(log *zap.Logger) {
	done, from, ok, err := t.job.Lookahead(t.seconds, lookaheadIntervals)
	at := func(second int) time.Time { return t.since.Add(time.Duration(second-t.job.Clock) * time.Second) }
	switch {
	case err != nil:
		// Unreachable after newTraining's check: the same steps were computable.
		log.Error("training job cannot be stepped", zap.String("job", t.job.Name), zap.Error(err))
		t.doneAt, t.doneStart, t.next = time.Time{}, time.Time{}, time.Time{}
	case ok:
		t.doneAt, t.doneStart = at(done), at(from)
		t.next = t.doneAt
	default:
		t.doneAt, t.doneStart = time.Time{}, time.Time{}
		t.next = t.since.Add(lookaheadIntervals * t.interval)
	}
}

// late says the job's completion is late (see training): at the first
// second of the interval that completes it.
func (t *training) late() bool { return !t.doneAt.IsZero() && t.doneAt.Equal(t.doneStart) }

// stepTo steps the job over every interval that has ended by now, and
// over the one that holds its completion once that second has come (a
// late completion only when afterDecide: its timer fired).
func (t *training) stepTo(now time.Time, afterDecide bool, log *zap.Logger) {
	for !t.job.Done {
		end := t.since.Add(t.interval)
		completing := !t.doneAt.IsZero() && t.since.Equal(t.doneStart) && !now.Before(t.doneAt) && (!t.late() || afterDecide)
		if now.Before(end) && !completing {
			break
		}
		if err := t.job.Advance(t.seconds); err != nil {
			log.Error("training job cannot be stepped", zap.String("job", t.job.Name), zap.Error(err))
			return
		}
		t.since = end
	}
	if !t.next.IsZero() && !now.Before(t.next) && t.doneAt.IsZero() {
		t.plan(log)
	}
}

// due is when the actor must look at the job next (zero: never), and
// whether that is a late completion. A job completed but not yet reported
// is due at once: on a scaled clock a look that came late may find its
// completion already past and step to it (rearm steps the jobs too), and
// only the completion timer's handling reports it.
func (t *training) due() (time.Time, bool) {
	if t.job.Done {
		return t.since, false
	}
	return t.next, t.late()
}

// state is the job's state for the bus.
func (t *training) state() *model.TrainingState {
	st := t.job.State()
	return &st
}

// pause is a hang of d: a hung GPU runs nothing, so its training jobs
// lose the hang's time, in whole seconds (the model's clock counts them):
// their clock and their interval grid move on by it without progress, and
// they complete that much later.
func (t *training) pause(d time.Duration, log *zap.Logger) {
	if d <= 0 || t.job.Done {
		return
	}
	secs := int(math.Ceil(d.Seconds()))
	t.since = t.since.Add(time.Duration(secs) * time.Second)
	t.job.Clock += secs
	t.plan(log)
}

// pauseTraining is the end of a hang of d for every training job running here.
func (a *Actor) pauseTraining(d time.Duration) {
	for _, s := range a.shares {
		if s.running && s.train != nil {
			s.train.pause(d, a.base)
		}
	}
}
