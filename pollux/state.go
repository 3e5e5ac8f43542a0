package pollux

import (
	"fmt"
	"slices"

	"github.com/gpusched/gpusched/model"
)

// State is the job's state on the wire (model.TrainingState): what a GPU
// actor that runs it, or a scheduler that decides for it, needs to step it
// exactly as this process would.
func (j *Job) State() model.TrainingState {
	return model.TrainingState{
		ClockS: j.Clock, RescaleS: j.Rescale, Placement: slices.Clone(j.Placement),
		LocalBatch: j.Config.A, AccumSteps: j.Config.K, Progress: j.Progress, Epoch: j.Epoch,
		Done: j.Done, CompletionS: j.Completion, ServiceGPUS: j.Service, RestartGPUS: j.RestartGPUSeconds,
		Restarts: j.Restarts, FirstAllocS: j.FirstAlloc, Preemptions: j.Preemptions, Approximate: j.Approximate,
	}
}

// Restore is the job of spec in state st, on m's application model. Only
// TunedJobs jobs travel (Tiresias and Optimus): a Pollux job's state
// includes its observations and fitted model, which do not.
func (m *Model) Restore(s Spec, st model.TrainingState) (*Job, error) {
	j, err := m.NewJob(s)
	if err != nil {
		return nil, err
	}
	if st.Epoch < 0 || st.Epoch >= j.app.MaxEpochs+1 || st.RescaleS < 0 || st.LocalBatch < 0 || st.AccumSteps < 0 {
		return nil, fmt.Errorf("job %s: state out of range (epoch %d, restart delay %d s, configuration %d×%d)",
			s.Name, st.Epoch, st.RescaleS, st.LocalBatch, st.AccumSteps+1)
	}
	for _, r := range st.Placement {
		if r <= 0 {
			return nil, fmt.Errorf("job %s: a node in the placement holds %d replicas", s.Name, r)
		}
	}
	if len(st.Placement) > 0 && st.LocalBatch == 0 {
		return nil, fmt.Errorf("job %s: placed without a configuration (local_batch 0)", s.Name)
	}
	j.Clock, j.Rescale, j.Placement = st.ClockS, st.RescaleS, slices.Clone(st.Placement)
	j.Config = Config{A: st.LocalBatch, K: st.AccumSteps}
	j.Progress, j.Epoch, j.Done, j.Completion = st.Progress, st.Epoch, st.Done, st.CompletionS
	j.Service, j.RestartGPUSeconds, j.Restarts, j.FirstAlloc = st.ServiceGPUS, st.RestartGPUS, st.Restarts, st.FirstAllocS
	j.Preemptions, j.Approximate = st.Preemptions, st.Approximate
	return j, nil
}

// SpecOf is the pollux spec of a training job named name submitted at
// second submit.
func SpecOf(name string, submit int, t model.Training) Spec {
	return Spec{Name: name, Submit: submit, App: t.App, Replicas: t.Replicas, Batch: t.Batch}
}

// Lookahead steps a copy of j interval by interval (at most max
// intervals) and reports the second it completes and the second the
// interval that completes it starts (they are equal when the job's last
// epoch ended exactly at the end of the interval before: its completion
// then belongs to the next interval, after the decision that starts it);
// ok is false when it does not complete within them. j is unchanged.
func (j *Job) Lookahead(interval, max int) (completion, start int, ok bool, err error) {
	c := *j
	c.Placement = slices.Clone(j.Placement)
	if j.elastic != nil {
		return 0, 0, false, fmt.Errorf("job %s: an elastic job cannot be stepped ahead", j.Name)
	}
	for range max {
		start := c.Clock
		if err := c.Advance(interval); err != nil {
			return 0, 0, false, err
		}
		if c.Done {
			return c.Completion, start, true, nil
		}
	}
	return 0, 0, false, nil
}

// Target is the progress at which the job completes: the end of its
// application's last epoch (MODEL.md §3.2).
func (j *Job) Target() float64 { return j.app.Bound(j.app.MaxEpochs) }
