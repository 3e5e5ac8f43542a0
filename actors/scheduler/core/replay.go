package core

import (
	"math"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
)

// ReplayConfig runs a reproduced simulator's rounds over the cluster's
// typed jobs (`cluster replay --gavel` and `--pal` without --offline): the
// scheduler steps Driver (the same loop `--offline` runs) from its inputs
// — each typed job submitted is an arrival, each round ends when the
// driver says — and enacts each round's tasks on the GPU actors: a job
// chosen again on the same GPUs runs on, one chosen elsewhere or not at
// all is stopped, one chosen anew is placed on the GPUs the task names.
// The GPU actors run the jobs at the throughput table's rates (alone or
// packed, ÷ the gang's pace on variable GPUs); the driver's float times
// decide, so that a live run's completion times are the offline run's.
type ReplayConfig struct {
	Driver policy.ReplayedRounds
	// Origin is the run's second 0.
	Origin time.Time
	// GPUs are the cluster's GPU ids in the driver's order: a task's GPU
	// i is GPUs[i].
	GPUs []string
	// Missed, when set, is told of each task the cluster did not run as
	// the round said (a placement refused, a GPU down): the driver counted
	// its work all the same, so the run no longer is the offline one.
	Missed func(job string, atS float64)
}

// pendingArrival is a submitted job not given to the driver yet.
type pendingArrival struct {
	id       int
	arrivalS float64
	spec     *events.Job
}

// replayRounds is the core's state of the replayed rounds.
type replayRounds struct {
	cfg ReplayConfig
	// ids are the driver's job ids by core job id, jobs the core jobs by
	// the driver's id (its arrival order).
	ids  map[string]int
	jobs []*job
	// arrivals are submitted jobs not given to the driver yet (their
	// arrival is after the driver's now), in submission order.
	arrivals []pendingArrival
	// due is when the next round is decided (zero: none is due; a
	// submission may make one due).
	due time.Time
	// want are the GPUs each job of the round in progress runs on;
	// leaseDone the jobs whose GPUs finished their work in it.
	want      map[*job][]string
	leaseDone map[*job]bool
	// stopping counts the round's stops not answered yet; toPlace are the
	// jobs placed once they all are (a GPU gives its room back only when
	// it has stopped what ran there).
	stopping int
	toPlace  []*job

	// What the rounds read and move of the rest of the core (set by New):
	// the view, the stops and placements that enact a round, the
	// lifecycle that says so, and complete, which ends a job.
	clock     *instant
	view      *view
	stops     *stops
	life      *lifecycle
	stats     *totals
	out       *outbox
	log       *zap.Logger
	negotiate func(a *attempt, p policy.Placement, victims []string)
	complete  func(j *job, at time.Time)
}

func newReplayRounds(cfg *ReplayConfig) *replayRounds {
	if cfg == nil {
		return nil
	}
	r := &replayRounds{cfg: *cfg, ids: map[string]int{}}
	// A driver whose rounds tick from second 0 (PAL's) has its first due
	// before any arrival.
	if t := cfg.Driver.NextRoundS(math.Inf(1)); !math.IsInf(t, 0) && !math.IsNaN(t) {
		r.due = r.at(t)
	}
	return r
}

// owns reports whether j is one of the rounds' jobs.
func (g *replayRounds) owns(j *job) bool {
	if g == nil {
		return false
	}
	_, ok := g.ids[j.id]
	return ok
}

// at is second s of the run as a time (rounded up to the nanosecond, so
// that nothing the driver counts as done by s is still due then).
func (g *replayRounds) at(s float64) time.Time {
	return g.cfg.Origin.Add(time.Duration(math.Ceil(s * float64(time.Second))))
}

// nextArrival is the earliest pending arrival's second (+Inf: none).
func (g *replayRounds) nextArrival() float64 {
	if len(g.arrivals) > 0 {
		return g.arrivals[0].arrivalS
	}
	return math.Inf(1)
}

// arrive takes a typed job on as an arrival of the replayed rounds, at
// arrivalS when the submission gives it (to more precision than the
// clock: it must be the clock's now to the nanosecond), else now; it
// waits for the next round. A job the driver refuses, or an arrival that
// is not now, is refused with the field that says why.
func (g *replayRounds) arrive(j *job, arrivalS *float64) (float64, *model.FieldError) {
	now := g.clock.now.Sub(g.cfg.Origin)
	arrival := now.Seconds()
	if arrivalS != nil {
		if d := time.Duration(*arrivalS*float64(time.Second)) - now; d < -time.Nanosecond || d > time.Nanosecond {
			return 0, model.Errorf("arrival_s", "%v s is not now (%v s into the run): a replayed arrival is the submission's own time, given to more precision than the clock's", *arrivalS, now.Seconds())
		}
		arrival = *arrivalS
	}
	if fe := g.cfg.Driver.Accept(&j.spec); fe != nil {
		return 0, fe
	}
	id := len(g.jobs)
	g.ids[j.id] = id
	g.jobs = append(g.jobs, j)
	g.arrivals = append(g.arrivals, pendingArrival{id: id, arrivalS: arrival, spec: &j.spec})
	return arrival, nil
}

// arrived makes a round due for an arrival at second arrival, if none is:
// when the driver says, at the earliest this instant, once its arrivals
// are in.
func (g *replayRounds) arrived(arrival float64) {
	if g.due.IsZero() {
		if t := g.cfg.Driver.NextRoundS(arrival); !math.IsInf(t, 0) && !math.IsNaN(t) {
			g.due = g.at(t)
		}
	}
}

// runRound ends the round in progress (or the idle wait) and
// decides the next (the offline loop, one turn): the driver accounts what
// ran, completions end their jobs here, the arrivals up to the driver's
// now join, and the new tasks are enacted.
func (g *replayRounds) runRound() {
	if g == nil || g.due.IsZero() || g.clock.now.Before(g.due) {
		return
	}
	g.due = time.Time{}
	d := g.cfg.Driver
	g.checkRan(g.clock.now, g.log)
	now := d.RoundEnded(g.nextArrival())
	g.completions(d.Completed())
	if d.Done() {
		return
	}
	for len(g.arrivals) > 0 && g.arrivals[0].arrivalS <= now {
		a := g.arrivals[0]
		if err := d.Arrive(a.id, a.arrivalS, a.spec); err != nil {
			g.log.Error("replayed arrival refused", zap.Int("id", a.id), zap.Error(err))
		}
		g.arrivals = g.arrivals[1:]
	}
	if err := d.Schedule(); err != nil {
		g.log.Error("replayed round failed", zap.Float64("at_s", now), zap.Error(err))
		return
	}
	g.enact()
	if t := d.NextRoundS(g.nextArrival()); !math.IsInf(t, 0) && !math.IsNaN(t) {
		g.due = g.at(t)
	}
}

// completions ends the jobs the driver has just completed: each at
// its completion second, stopped on its GPUs first if they still run it.
func (g *replayRounds) completions(ids []int) {
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
			g.stops.stop(j, events.OpRelease, g.clock.now, g.clock.wall, func() { g.complete(j, at) })
			continue
		}
		g.complete(j, at)
	}
}

// checkRan checks that the round ending ran on the cluster as
// decided: each of its jobs runs on its task's GPUs, or those GPUs
// finished its work.
func (g *replayRounds) checkRan(now time.Time, log *zap.Logger) {
	for _, t := range g.cfg.Driver.Tasks() { // the round ending, in its order (not the map's)
		for _, id := range t.Jobs {
			j := g.jobs[id]
			gpus, ok := g.want[j]
			if !ok || g.leaseDone[j] || (j.state == stateRunning && sameGPUs(j.gpus, gpus)) {
				continue
			}
			at := now.Sub(g.cfg.Origin).Seconds()
			log.Error("a replayed task did not run as its round said", zap.String("job", j.id), zap.Strings("gpus", gpus),
				zap.String("state", j.state), zap.String("reason", j.reason))
			if g.cfg.Missed != nil {
				g.cfg.Missed(j.id, at)
			}
		}
	}
}

// enact makes the cluster run the round's tasks: jobs running
// where their task is run on; others are stopped; once every stop is
// answered, each task's jobs not running there are placed on its GPUs,
// each with the work it has done.
func (g *replayRounds) enact() {
	want := map[*job][]string{}
	g.want, g.leaseDone, g.toPlace = want, map[*job]bool{}, nil
	for _, t := range g.cfg.Driver.Tasks() {
		for _, id := range t.Jobs {
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
			g.stops.stop(j, events.OpPreempt, g.clock.now, g.clock.wall, func() {
				j.preemptions++
				g.stats.preemptions++
				g.life.transition(j, events.JobPreempted, "the replayed round gave its GPUs to others", g.clock.now)
				g.life.transition(j, events.JobQueued, "", g.clock.now)
				if g.stopping--; g.stopping == 0 {
					g.placeRound()
				}
			})
		}
	}
	if g.stopping == 0 {
		g.placeRound()
	}
}

// placeRound places the round's jobs that do not run where their
// task is, in the driver's job order.
func (g *replayRounds) placeRound() {
	for _, j := range g.toPlace {
		if gpus, ok := g.want[j]; ok && !j.terminal() && j.negotiating == nil && j.state != stateRunning {
			g.place(j, gpus)
		}
	}
	g.toPlace = nil
}

// place reserves and commits j on gpus, with the work the driver
// counts done. GPUs of one node are that node's placement; a gang across
// nodes names no node (each GPU is reached on its own, and holds no CPU or
// memory of its node).
func (g *replayRounds) place(j *job, gpus []string) {
	j.progress = g.cfg.Driver.Progress(g.ids[j.id])
	var p policy.Placement
	for i, id := range gpus {
		gs, ok := g.view.gpus[id]
		if !ok {
			g.log.Error("replayed task names an unknown GPU", zap.String("gpu", id))
			return
		}
		if i == 0 {
			p.Node, p.NodeIdx = gs.g.Node, gs.g.NodeIndex
		} else if gs.g.Node != p.Node {
			p.Node, p.NodeIdx = "", -1
		}
		p.GPUs = append(p.GPUs, id)
		p.GPUIdx = append(p.GPUIdx, gs.g.Index)
	}
	g.negotiate(&attempt{job: j, preempting: true}, p, nil)
}

// leaseEnded takes a GPU's word that a replayed job it ran
// completed its work there: the driver decides when the job completes
// (its float times against the GPU's nanoseconds), so the GPU is free and
// the job waits for the round's end.
func (g *replayRounds) leaseEnded(j *job, gpuID string) {
	if j.state != stateRunning || !slices.Contains(j.gpus, gpuID) {
		return
	}
	j.shardsDone = append(j.shardsDone, gpuID)
	if j.shardsLeft--; j.shardsLeft > 0 {
		return
	}
	if want, ok := g.want[j]; ok && sameGPUs(want, j.gpus) {
		g.leaseDone[j] = true
	}
	if j.node != "" {
		g.out.freeAtNode(j.node, j.id)
		g.view.releaseNode(j, j.node)
	}
	j.endStint(g.clock.now, j.progress)
	j.node, j.gpus, j.placement = "", nil, ""
	g.life.transition(j, events.JobQueued, "its work on its GPUs is done; the replayed round's end decides", g.clock.now)
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

// dueAt is when the next replayed round is decided (zero: none due, or
// no replayed rounds here).
func (g *replayRounds) dueAt() time.Time {
	if g == nil {
		return time.Time{}
	}
	return g.due
}
