package core

import (
	"slices"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
)

// checkLeases declares down every node whose heartbeats stopped and
// dead every GPU whose lease has run out.
func (s *Core) checkLeases() {
	if s.live.lapseNodes(s.wall, s.now) {
		s.dirty = true
	}
	for _, g := range s.view.cluster.GPUs {
		if reason, ok := s.live.runOut(s.view.gpus[g.ID], s.wall); ok {
			s.declareDead(s.view.gpus[g.ID], reason)
		}
	}
}

// declareDead is the scheduler's verdict on a GPU it stopped hearing from:
// it publishes gpu.down for the GPU's incarnation (which, if alive but cut
// off, has already stopped its own jobs: its fence comes before the lease
// ends), re-queues the jobs it ran, and ignores anything that incarnation
// says from now on. The GPU comes back as its next incarnation.
func (s *Core) declareDead(gs *gpuState, reason string) {
	inc := gs.status.Incarnation
	s.live.bury(gs, inc)
	g := gs.g
	st := gs.status
	st.Change, st.JobID, st.Reason = events.ChangeLeaseExpired, "", reason
	st.Jobs = s.running.jobsOn(g.ID, inc, st.Jobs, s.now)
	// Its jobs ran at least until it was last heard (its lease's last
	// renewal): what its last status said may be hours older (a GPU
	// whose jobs do not change says nothing), and a job would lose the
	// checkpoints it reached since.
	for i := range st.Jobs {
		if j, ok := s.jobs[st.Jobs[i].JobID]; ok && !gs.renewedAt.IsZero() {
			st.Jobs[i].ProgressS = max(st.Jobs[i].ProgressS, j.estimate(gs.renewedAt)) // renewedAt is never after now
		}
	}
	s.stats.deaths++
	s.log.Warn("GPU declared dead", zap.String("gpu", g.ID), zap.String("node", g.Node), zap.Int("incarnation", inc),
		zap.String("reason", reason), zap.Int("jobs", len(st.Jobs)))
	s.out.emit(s.cfg.Subjects.GPUEvent(g.Node, g.ID, events.GPUDown), events.Type("gpu", events.GPUDown), g.ID, s.now, st)
	s.loseGPU(gs, st.Jobs, false, "GPU "+g.ID+" on "+g.Node+" declared dead ("+reason+")")
}

// gpuDown handles a GPU actor that crashed: every job it ran is lost and
// re-queued from its last checkpoint. The new incarnation's gpu.up (which
// follows) empties the GPU in the view.
func (s *Core) gpuDown(st events.GPUStatus) {
	s.log.Warn("GPU down", zap.String("gpu", st.GPU), zap.String("node", st.Node), zap.String("reason", st.Reason),
		zap.Int("jobs_lost", len(st.Jobs)))
	gs, ok := s.view.gpus[st.GPU]
	if !ok {
		return
	}
	s.live.bury(gs, st.Incarnation)
	s.stats.deaths++
	// The scheduler's own records say which jobs ran there; the down event's
	// list gives the progress they had.
	s.loseGPU(gs, s.running.jobsOn(st.GPU, st.Incarnation, st.Jobs, s.now), false, "GPU "+st.GPU+" on "+st.Node+" went down ("+st.Reason+")")
}

// loseGPU re-queues the jobs that ran on a GPU now gone, from their last
// checkpoint, and empties the GPU in the view; jobs waiting for that GPU
// to confirm a stop no longer wait. rejoined says the GPU came back as a
// new incarnation (requeueRejoined), not dead (requeueLost).
func (s *Core) loseGPU(gs *gpuState, lost []events.GPUJob, rejoined bool, reason string) {
	for _, sj := range lost {
		j, ok := s.jobs[sj.JobID]
		if !ok || j.state != stateRunning || !slices.Contains(j.gpus, gs.g.ID) {
			continue
		}
		s.stats.lostJobs++
		if rejoined {
			s.requeueRejoined(j, sj.ProgressS, reason)
			continue
		}
		s.requeueLost(j, sj.ProgressS, reason)
	}
	s.unconfirmed.confirmOn(gs.g.ID, func(int) bool { return true })
	gs.g.Allocs = gs.g.Allocs[:0]
	gs.g.Util = 0
	s.view.rebuildShares(gs.g, s.jobs)
	s.dirty = true
}

// requeueLost stops what is left of a job that lost a GPU, keeps the work
// up to its last checkpoint and puts it back in the queue (at its place by
// priority and submission time). lostAt, when not negative, is the progress
// the lost GPU last had: the job keeps no more than that.
func (s *Core) requeueLost(j *job, lostAt float64, reason string) {
	s.requeue(j, lostAt, -1, reason)
}

// requeueRejoined is requeueLost for a job whose GPU came back as a new
// incarnation without it. That GPU stopped it itself and its answer to
// the stop says at what progress; lastKnown (the progress of the GPU's
// last status, which may be far older) stands in only when no answer
// says; a gang's other shares that rejoin while the stop is in flight
// lower it to theirs (stops.rejoined).
func (s *Core) requeueRejoined(j *job, lastKnown float64, reason string) {
	s.requeue(j, -1, lastKnown, reason)
}

// requeue is requeueLost and requeueRejoined.
func (s *Core) requeue(j *job, lostAt, lastKnown float64, reason string) {
	if j.stopping != nil {
		return // being stopped already: it is accounted for when the stop ends
	}
	s.stops.stopLost(j, events.OpRelease, lostAt, lastKnown, s.now, s.wall, func() {
		progress := j.progress
		if lostAt >= 0 {
			progress = min(progress, lostAt)
		}
		kept := j.spec.Kept(progress)
		j.lostS += progress - kept
		j.progress = kept
		s.life.transition(j, events.JobLost, reason, s.now)
		s.life.transition(j, events.JobQueued, "", s.now)
		s.life.enqueue(j)
	})
}
