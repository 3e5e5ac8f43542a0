package core

import (
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/policy"
)

// queuedAt is the job as a queue order sees it now: for a running job,
// the stint under way counts in its service and progress.
func (j *job) queuedAt(now time.Time) policy.Queued {
	q := j.queued()
	if j.state != stateRunning || j.stintAt.IsZero() {
		return q
	}
	stint := now.Sub(j.stintAt).Seconds()
	q.AttainedGPUS = (j.runS + stint) * float64(j.spec.GPUs)
	q.ProgressS = j.estimate(now)
	if q.DemotedAt.IsZero() {
		q.DemotedAt = j.demotion(stint)
	}
	return q
}

// demotion is when, within the stint under way (stint seconds long so
// far), the job's service passed policy.LASThreshold; zero if it has not.
func (j *job) demotion(stint float64) time.Time {
	gpus := float64(j.spec.GPUs)
	if gpus <= 0 || (j.runS+stint)*gpus < policy.LASThreshold {
		return time.Time{}
	}
	left := max(0, policy.LASThreshold/gpus-j.runS)
	return j.stintAt.Add(time.Duration(left * float64(time.Second)))
}

// runRound is one round of the Round in force (policy.Round): every
// running and waiting job in queue order, their service so far counted to
// now; the running jobs it names are preempted (each keeps its progress up
// to its last checkpoint and goes back to the queue) and the pass that
// follows places the queue in order.
func (pl *placer) runRound() {
	now := pl.clock.now
	type entry struct {
		j *job
		q policy.Queued
	}
	all := make([]entry, 0, pl.running.len()+pl.queue.len())
	for _, j := range pl.running.list {
		all = append(all, entry{j, j.queuedAt(now)})
	}
	for _, j := range pl.queue.jobs {
		if j.state == events.JobQueued {
			all = append(all, entry{j, j.queuedAt(now)})
		}
	}
	slices.SortFunc(all, func(a, b entry) int { return pl.plugins.Order(&a.q, &b.q) })
	c := pl.view.sorted()
	jobs := make([]policy.RoundJob, len(all))
	for i, e := range all {
		r := pl.view.request(e.j)
		r.Held = nil // holds are the pass's business
		jobs[i] = policy.RoundJob{Request: r, Running: e.j.state == stateRunning, Preemptible: e.j.spec.Preemptible, Node: e.j.node}
		for _, id := range e.j.gpus {
			if gs, ok := pl.view.gpus[id]; ok {
				jobs[i].GPUs = append(jobs[i].GPUs, gs.g.Index)
			}
		}
	}
	pl.view.refreshWorkload(pl.classes)
	for _, id := range pl.plugins.Stop(c, jobs) {
		v, ok := pl.jobs[id]
		if !ok || v.state != stateRunning || !v.spec.Preemptible || v.stopping != nil {
			continue // a round names only running, preemptible jobs
		}
		pl.stops.stop(v, events.OpPreempt, pl.clock.now, pl.clock.wall, func() {
			v.preemptions++
			pl.stats.preemptions++
			pl.log.Info("stopped by the round", zap.String("job", v.id), zap.String("name", v.spec.Name),
				zap.String("round", pl.plugins.Round.Name()), zap.Float64("kept_progress_s", v.progress))
			pl.life.transition(v, events.JobPreempted, "round "+pl.plugins.Round.Name()+": jobs ahead of it in queue order ("+pl.plugins.QueueSort.Name()+") take its GPUs", pl.clock.now)
			pl.life.transition(v, events.JobQueued, "", pl.clock.now)
			pl.life.enqueue(v)
		})
	}
	*pl.dirty = true
}
