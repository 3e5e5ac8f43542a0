package pollux

import (
	"fmt"
	"maps"
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
		Elastic: j.elastic.wire(),
	}
}

// wire is the elastic state on the wire (nil for a TunedJobs job).
func (e *elasticState) wire() *model.ElasticState {
	if e == nil {
		return nil
	}
	w := &model.ElasticState{GradSqr: e.g2, GradVar: e.s2, Fixed: e.fixed}
	for _, o := range e.profile {
		w.Profile = append(w.Profile, model.Observation{Nodes: o.nodes, Replicas: o.replicas, Local: o.local, Step: o.step, Sync: o.sync})
	}
	if p := e.perf; p != nil {
		w.Perf = &model.PerfFit{AlphaC: p.AlphaC, BetaC: p.BetaC, AlphaN: p.AlphaN, BetaN: p.BetaN, AlphaR: p.AlphaR, BetaR: p.BetaR, Gamma: p.Gamma}
	}
	return w
}

// elasticFrom is the elastic state a wire form describes (what it has
// seen is what it profiled).
func elasticFrom(w *model.ElasticState) *elasticState {
	e := &elasticState{seen: map[[3]int]bool{}, g2: w.GradSqr, s2: w.GradVar, fixed: w.Fixed}
	for _, o := range w.Profile {
		e.profile = append(e.profile, observation{nodes: o.Nodes, replicas: o.Replicas, local: o.Local, step: o.Step, sync: o.Sync})
		e.seen[[3]int{o.Nodes, o.Replicas, o.Local}] = true
	}
	if p := w.Perf; p != nil {
		e.perf = &PerfParams{AlphaC: p.AlphaC, BetaC: p.BetaC, AlphaN: p.AlphaN, BetaN: p.BetaN, AlphaR: p.AlphaR, BetaR: p.BetaR, Gamma: p.Gamma}
	}
	return e
}

// clone is a copy of the elastic state that shares nothing with it.
func (e *elasticState) clone() *elasticState {
	if e == nil {
		return nil
	}
	c := *e
	c.seen = maps.Clone(e.seen)
	c.profile = slices.Clone(e.profile)
	c.speedups = nil // a memo the search fills as it goes
	if e.perf != nil {
		p := *e.perf
		c.perf = &p
	}
	return &c
}

// Restore is the job of spec in state st, on m's application model: a
// TunedJobs job (Tiresias, Optimus), or a Pollux job with its
// observations and fitted model when st carries them (Elastic).
func (m *Model) Restore(s Spec, st model.TrainingState) (*Job, error) {
	j, err := m.NewJob(s)
	if err != nil {
		return nil, err
	}
	if st.Elastic != nil {
		j.elastic = elasticFrom(st.Elastic)
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
	c.elastic = j.elastic.clone()
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
