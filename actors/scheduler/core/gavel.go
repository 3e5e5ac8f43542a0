package core

import (
	"math"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/gavel"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
)

// GavelConfig runs Gavel's round mechanism over the cluster's typed jobs
// (`cluster replay --gavel` without --offline): the scheduler steps
// Driver (gavel.Driver, the same loop `--offline` runs) from its inputs —
// each typed job submitted is an arrival, each round ends at its tasks'
// latest finish — and enacts each round's tasks on the GPU actors: a job
// chosen again on the same GPUs runs on, one chosen elsewhere or not at all
// is stopped, one chosen anew is placed on the GPUs the task names. The
// GPU actors run the jobs at the throughput table's rates (alone or
// packed); the driver's float times decide, so that a live run's
// completion times are the offline run's.
type GavelConfig struct {
	Driver *gavel.Driver
	Data   *gavel.Data
	// Origin is the run's second 0.
	Origin time.Time
	// GPUs are the cluster's GPU ids in Gavel's worker order (its K80s,
	// then P100s, then V100s): a task's GPU i is GPUs[i].
	GPUs []string
	// Missed, when set, is told of each task the cluster did not run as
	// the round said (a placement refused, a GPU down): the driver counted
	// its steps all the same, so the run no longer is the offline one.
	Missed func(job string, atS float64)
}

// gavelRounds is the core's state of Gavel's rounds.
type gavelRounds struct {
	cfg GavelConfig
	// ids are the driver's job ids by core job id, jobs the core jobs by
	// the driver's id (its arrival order).
	ids  map[string]int
	jobs []*job
	// arrivals are submitted jobs not given to the driver yet (their
	// arrival is after the driver's now), in submission order.
	arrivals []gavel.Job
	// due is when the next round is decided (zero: none is due; a
	// submission makes one due at once).
	due time.Time
	// want are the GPUs each job of the round in progress runs on;
	// leaseDone the jobs whose GPUs finished their steps in it.
	want      map[*job][]string
	leaseDone map[*job]bool
	// stopping counts the round's stops not answered yet; toPlace are the
	// jobs placed once they all are (a GPU gives its room back only when
	// it has stopped what ran there).
	stopping int
	toPlace  []*job
}

func newGavelRounds(cfg *GavelConfig) *gavelRounds {
	if cfg == nil {
		return nil
	}
	return &gavelRounds{cfg: *cfg, ids: map[string]int{}}
}

// owns reports whether j is one of the rounds' jobs.
func (g *gavelRounds) owns(j *job) bool {
	if g == nil {
		return false
	}
	_, ok := g.ids[j.id]
	return ok
}

// at is second s of the run as a time (rounded up to the nanosecond, so
// that nothing the driver counts as done by s is still due then).
func (g *gavelRounds) at(s float64) time.Time {
	return g.cfg.Origin.Add(time.Duration(math.Ceil(s * float64(time.Second))))
}

// GavelRoundAt is when the next Gavel round is decided (zero: none due).
func (s *Core) GavelRoundAt() time.Time {
	if s.gavel == nil {
		return time.Time{}
	}
	return s.gavel.due
}

// submitGavel takes a typed job on as a Gavel arrival: arrivalS, when the
// submission gives it, is its arrival to more precision than the clock
// (it must be the clock's now to the nanosecond); it waits for the next
// round.
func (s *Core) submitGavel(j *job, m *Msg, arrivalS *float64) {
	g := s.gavel
	now := s.now.Sub(g.cfg.Origin)
	arrival := now.Seconds()
	if arrivalS != nil {
		if d := time.Duration(*arrivalS*float64(time.Second)) - now; d < -time.Nanosecond || d > time.Nanosecond {
			s.respond(m, events.ErrorReply{Error: model.Errorf("arrival_s", "%v s is not now (%v s into the run): a Gavel arrival is the submission's own time, given to more precision than the clock's", *arrivalS, now.Seconds())})
			return
		}
		arrival = *arrivalS
	}
	tmpl := slices.IndexFunc(g.cfg.Data.Templates, func(t gavel.Template) bool { return t.Name == j.spec.JobType })
	if tmpl < 0 {
		s.respond(m, events.ErrorReply{Error: model.Errorf("job_type", "%q is not one of Gavel's job types", j.spec.JobType)})
		return
	}
	id := len(g.jobs)
	g.ids[j.id] = id
	g.jobs = append(g.jobs, j)
	g.arrivals = append(g.arrivals, gavel.Job{ID: id, Arrival: arrival, Template: tmpl, Type: j.spec.JobType, Scale: j.spec.GPUs, TotalSteps: j.spec.Steps})
	s.jobs[j.id] = j
	s.order = append(s.order, j)
	s.transition(j, events.JobSubmitted, "")
	s.transition(j, events.JobQueued, "")
	s.setPending(j, "waits for a Gavel round")
	s.answer(m.Reply, j, events.SubmitReply{JobID: j.id, State: events.JobQueued})
	if g.due.IsZero() && len(g.cfg.Driver.Tasks()) == 0 {
		g.due = s.now // idle: a round at this instant, once its arrivals are in
	}
}

// runGavelRound ends the round in progress (or the idle wait) and decides
// the next (gavel.Run's loop, one turn): the driver accounts the finished
// tasks, completions end their jobs here, the arrivals up to the driver's
// now join, and the new tasks are enacted.
func (s *Core) runGavelRound() {
	g := s.gavel
	if g == nil || g.due.IsZero() || s.now.Before(g.due) {
		return
	}
	g.due = time.Time{}
	d := g.cfg.Driver
	s.gavelCheckRan()
	next := math.Inf(1)
	if len(g.arrivals) > 0 {
		next = g.arrivals[0].Arrival
	}
	now := d.RoundEnded(next)
	s.gavelCompletions(d.Completed())
	if d.Done() {
		return
	}
	for len(g.arrivals) > 0 && g.arrivals[0].Arrival <= now {
		if err := d.Arrive(g.arrivals[0]); err != nil {
			s.log.Error("gavel arrival refused", zap.Error(err))
		}
		g.arrivals = g.arrivals[1:]
	}
	if err := d.Schedule(); err != nil {
		s.log.Error("gavel round failed", zap.Float64("at_s", now), zap.Error(err))
		return
	}
	s.enactGavel()
	if tasks := d.Tasks(); len(tasks) > 0 {
		latest := tasks[0].Finish
		for _, t := range tasks {
			latest = max(latest, t.Finish)
		}
		g.due = g.at(latest)
	} else if len(g.arrivals) > 0 {
		g.due = g.at(g.arrivals[0].Arrival)
	}
}

// gavelCompletions ends the jobs the driver has just completed: each at
// its completion second, stopped on its GPUs first if they still run it.
func (s *Core) gavelCompletions(ids []int) {
	g := s.gavel
	for _, id := range ids {
		j := g.jobs[id]
		if j.terminal() {
			continue
		}
		finish := g.cfg.Driver.End(id)
		j.finishS = &finish
		j.progress = g.cfg.Driver.Progress(id)
		at := g.at(finish)
		if j.state == stateRunning && len(j.gpus) > 0 {
			s.stop(j, events.OpRelease, func() { s.complete(j, at) })
			continue
		}
		s.complete(j, at)
	}
}

// gavelCheckRan checks that the round ending ran on the cluster as
// decided: each of its jobs runs on its task's GPUs, or those GPUs
// finished its steps.
func (s *Core) gavelCheckRan() {
	g := s.gavel
	for _, t := range g.cfg.Driver.Tasks() { // the round ending, in its order (not the map's)
		for _, id := range t.ID.Members() {
			j := g.jobs[id]
			gpus, ok := g.want[j]
			if !ok || g.leaseDone[j] || (j.state == stateRunning && sameGPUs(j.gpus, gpus)) {
				continue
			}
			at := s.now.Sub(g.cfg.Origin).Seconds()
			s.log.Error("a Gavel task did not run as its round said", zap.String("job", j.id), zap.Strings("gpus", gpus),
				zap.String("state", j.state), zap.String("reason", j.reason))
			if g.cfg.Missed != nil {
				g.cfg.Missed(j.id, at)
			}
		}
	}
}

// enactGavel makes the cluster run the round's tasks: jobs running where
// their task is run on; others are stopped; once every stop is answered,
// each task's jobs not running there are placed on its GPUs, each with the
// steps it has done.
func (s *Core) enactGavel() {
	g := s.gavel
	want := map[*job][]string{}
	g.want, g.leaseDone, g.toPlace = want, map[*job]bool{}, nil
	for _, t := range g.cfg.Driver.Tasks() {
		for _, id := range t.ID.Members() {
			var gpus []string
			for _, i := range t.GPUs {
				gpus = append(gpus, g.cfg.GPUs[i])
			}
			want[g.jobs[id]] = gpus
		}
	}
	for _, j := range g.jobs {
		if j.terminal() || j.stopping != nil {
			continue
		}
		gpus, chosen := want[j]
		if j.state == stateRunning && chosen && sameGPUs(j.gpus, gpus) {
			continue // runs on: its lease renewed
		}
		if chosen {
			g.toPlace = append(g.toPlace, j)
		}
		if j.state == stateRunning {
			g.stopping++
			s.stop(j, events.OpPreempt, func() {
				j.preemptions++
				s.stats.preemptions++
				s.transition(j, events.JobPreempted, "the Gavel round gave its GPUs to others")
				s.transition(j, events.JobQueued, "")
				if g.stopping--; g.stopping == 0 {
					s.placeGavelRound()
				}
			})
		}
	}
	if g.stopping == 0 {
		s.placeGavelRound()
	}
}

// placeGavelRound places the round's jobs that do not run where their
// task is, in the driver's job order.
func (s *Core) placeGavelRound() {
	g := s.gavel
	for _, j := range g.toPlace {
		if gpus, ok := g.want[j]; ok && !j.terminal() && j.negotiating == nil && j.state != stateRunning {
			s.placeGavel(j, gpus)
		}
	}
	g.toPlace = nil
}

// placeGavel reserves and commits j on gpus (one node's: each of the
// cluster's nodes holds one GPU type), with the steps the driver counts
// done.
func (s *Core) placeGavel(j *job, gpus []string) {
	j.progress = s.gavel.cfg.Driver.Progress(s.gavel.ids[j.id])
	var p policy.Placement
	for _, id := range gpus {
		gs, ok := s.view.gpus[id]
		if !ok {
			s.log.Error("gavel task names an unknown GPU", zap.String("gpu", id))
			return
		}
		p.Node, p.NodeIdx = gs.g.Node, gs.g.NodeIndex
		p.GPUs = append(p.GPUs, id)
		p.GPUIdx = append(p.GPUIdx, gs.g.Index)
	}
	s.negotiate(&attempt{job: j, preempting: true}, p, nil)
}

// gavelLeaseEnded takes a GPU's word that a Gavel job it ran completed its
// steps there: the driver decides when the job completes (its float times
// against the GPU's nanoseconds), so the GPU is free and the job waits
// for the round's end.
func (s *Core) gavelLeaseEnded(j *job, gpuID string) {
	if j.state != stateRunning || !slices.Contains(j.gpus, gpuID) {
		return
	}
	j.shardsDone = append(j.shardsDone, gpuID)
	if j.shardsLeft--; j.shardsLeft > 0 {
		return
	}
	if want, ok := s.gavel.want[j]; ok && sameGPUs(want, j.gpus) {
		s.gavel.leaseDone[j] = true
	}
	s.freeAtNode(j.node, j.id)
	s.releaseNode(j, j.node)
	j.endStint(s.now, j.progress)
	j.node, j.gpus, j.placement = "", nil, ""
	s.transition(j, events.JobQueued, "its steps on its GPUs are done; the Gavel round's end decides")
}

// sameGPUs reports whether a and b hold the same GPU ids.
func sameGPUs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
