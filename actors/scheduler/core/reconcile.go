package core

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/vram"
)

// reconcile compares what a GPU says it runs (an authoritative status of
// its current incarnation) with what the scheduler believes: a job the
// scheduler believes runs there but the GPU no longer has ended there
// unseen (its event was lost): the GPU's memory of ended jobs says how;
// a job the GPU runs that the scheduler placed elsewhere or stopped is
// released there; one the scheduler does not know is re-learned.
func (s *Core) reconcile(gs *gpuState, st events.GPUStatus) {
	// A GPU runs a handful of jobs: linear lookups, no allocation on this
	// path, which every status event takes.
	var missing []*job
	for _, j := range s.running.onGPU(st.GPU) {
		// A share that completed there is not missing: it ended.
		if j.id != st.JobID && !slices.Contains(j.shardsDone, st.GPU) {
			if _, ok := hasJob(st.Jobs, j.id); !ok {
				missing = append(missing, j)
			}
		}
	}
	// Settled in the order they began running, whatever order their GPU
	// was indexed in.
	s.running.inOrder(missing)
	var unknown, stray []string
	for _, gj := range st.Jobs {
		if gj.State != events.GPUJobRunning {
			continue
		}
		j, ok := s.jobs[gj.JobID]
		switch {
		case !ok:
			unknown = append(unknown, gj.JobID)
		case j.relearning && j.state == stateRunning && j.runsOnNode(st.Node) && !slices.Contains(j.gpus, st.GPU) &&
			len(j.gpus) < j.sharesWanted() && (j.relearnFrom == nil || slices.Contains(j.relearnFrom, st.GPU)) &&
			(gj.Assignment == nil || gj.Assignment.Placement == j.placement):
			// Another share of a gang being read back after a restart, on
			// a GPU its record names (its placement, once read in full):
			// re-learned, not a stray.
			unknown = append(unknown, gj.JobID)
		case j.stopping != nil && slices.ContainsFunc(j.stopping.calls, func(c ctlCall) bool { return c.gpu == st.GPU }):
			// Being stopped there (a status sent before the stop arrived,
			// about another job): its stop is on its way, not a stray.
		case j.state != stateRunning || !slices.Contains(j.gpus, st.GPU):
			stray = append(stray, gj.JobID)
		}
	}
	// A job stopped on an unreachable GPU waits until the GPU shows it no
	// longer runs it.
	if s.unconfirmed.any() {
		if s.unconfirmed.confirmOn(st.GPU, func(inc int) bool { return st.Incarnation > inc }) {
			s.dirty = true
		}
		for _, j := range s.unconfirmed.on(st.GPU) {
			// The GPU's current word, whatever incarnation the stop was
			// sent to (a restarted process numbers them from 1 again).
			if _, still := hasJob(st.Jobs, j.id); !still {
				s.unconfirmed.confirm(j, st.GPU)
				s.dirty = true
			}
		}
	}
	if len(stray) > 0 {
		s.log.Warn("GPU runs jobs the scheduler stopped or placed elsewhere: releasing them", zap.String("gpu", st.GPU), zap.Strings("jobs", stray))
		s.out.sendAll([]ctlCall{{subject: s.cfg.Subjects.GPUCtl(st.Node, st.GPU), ctl: events.Control{Op: events.OpRelease, Jobs: stray}, gpu: st.GPU}})
		for _, id := range stray {
			// Its node actor holds its CPU and memory too, unless the job
			// runs, or is being placed, on that node now (the node keeps
			// one hold per job).
			j := s.jobs[id]
			if (j.state != stateRunning || j.node != st.Node) && (j.negotiating == nil || j.negotiating.place.Node != st.Node) {
				s.out.freeAtNode(st.Node, id)
			}
		}
	}
	// A restarted scheduler reads each GPU in full once, for what ended
	// there while no scheduler watched (a job it inherited, or a share of
	// a gang it is reading back).
	catchUp := s.restart.catchingUp() && !gs.described
	if len(missing) == 0 && len(unknown) == 0 && !catchUp {
		return
	}
	if !hasSpecs(st) {
		// The GPU's full status (with its jobs' specs and what ended
		// there) comes back through applyStatus, which reconciles it.
		s.describe(st.Node, st.GPU)
		return
	}
	full := st
	gs.described = true
	for _, gj := range full.Jobs {
		if slices.Contains(unknown, gj.JobID) && gj.State == events.GPUJobRunning {
			s.recovery.adopt(full, gj)
		}
	}
	if catchUp {
		s.recovery.accountEnded(full)
	}
	s.recovery.relearnEnded(full)
	ended := map[string]events.EndedJob{}
	for _, e := range full.Ended {
		ended[e.JobID] = e
	}
	for _, j := range missing {
		if j.state != stateRunning || !slices.Contains(j.gpus, st.GPU) {
			continue
		}
		e, ok := ended[j.id]
		switch {
		case ok && e.Change == events.ChangeCompleted:
			// Its status event had not come: lost, or still on its way (a
			// full status answers on another subscription and can pass
			// it). Not a fault on its own: the event, if it comes, is
			// stale then.
			s.log.Info("completion learned from the GPU's full status before its event", zap.String("job", j.id), zap.String("gpu", st.GPU))
			if e.Training != nil {
				s.training.restore(j.id, *e.Training, s.log)
			}
			s.shardDone(j.id, st.GPU)
		case ok:
			s.requeueLost(j, e.ProgressS, "GPU "+st.GPU+" no longer runs it ("+e.Change+"; its event was lost)")
		default:
			if _, still := hasJob(full.Jobs, j.id); !still {
				s.requeueLost(j, -1, "GPU "+st.GPU+" no longer runs it (reconciled)")
			}
		}
	}
	s.dirty = true
}

// hasSpecs reports whether a status is a full describe (WithSpecs).
func hasSpecs(st events.GPUStatus) bool {
	if st.Ended != nil {
		return true
	}
	for _, j := range st.Jobs {
		if j.Assignment != nil {
			return true
		}
	}
	return false
}

// relearned ends a job's reading back (it is whole, or placed or stopped
// anew).
func (r *jobReadBack) relearned() {
	r.relearning, r.relearnFrom = false, nil
}

// mayRunOn are the GPUs a job runs on and, while it is read back after a
// restart, those its record names that have not been read yet.
func (j *job) mayRunOn() []string {
	if !j.relearning {
		return j.gpus
	}
	gpus := slices.Clone(j.gpus)
	for _, g := range j.relearnFrom {
		if !slices.Contains(gpus, g) {
			gpus = append(gpus, g)
		}
	}
	return gpus
}

// appendShare adds gpu to the GPUs a job being read back runs on, in the
// order its record names them (then by id): the GPUs answer a restarted
// scheduler in any order, and what it records must not depend on it.
func appendShare(j *job, gpu string) []string {
	gpus := append(j.gpus, gpu)
	rank := func(g string) int {
		if i := slices.Index(j.relearnFrom, g); i >= 0 {
			return i
		}
		return len(j.relearnFrom)
	}
	slices.SortStableFunc(gpus, func(a, b string) int {
		if c := cmp.Compare(rank(a), rank(b)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return gpus
}

// sharesWanted is how many GPUs a job runs on when whole: a training
// job's, its allocation's (known when read back after a restart; 0
// otherwise), as a round may give it other than the replicas it asked.
func (j *job) sharesWanted() int {
	if j.spec.Training != nil {
		return j.replicas
	}
	return j.spec.GPUs
}

func hasJob(jobs []events.GPUJob, id string) (events.GPUJob, bool) {
	for _, j := range jobs {
		if j.JobID == id {
			return j, true
		}
	}
	return events.GPUJob{}, false
}

// validStatus checks a GPU event against its subject: a status that names
// another GPU, or no capacity, is dropped with a logged reason.
func validStatus(node, gpu string, st events.GPUStatus) *model.FieldError {
	switch {
	case st.GPU != gpu:
		return model.Errorf("data.gpu", "names GPU %q on the subject of %q", st.GPU, gpu)
	case st.Node != node:
		return model.Errorf("data.node", "names node %q on the subject of %q", st.Node, node)
	case st.Incarnation < 1:
		return model.Errorf("data.incarnation", "must be at least 1")
	case st.VRAMTotal <= 0:
		return model.Errorf("data.vram_total", "must be positive")
	}
	return nil
}

// warming reports whether a restarted scheduler is still in its warm-up:
// one lease from its start, while the GPUs report in. A scheduler no GPU
// has joined yet (a control plane whose nodes run elsewhere) is warming
// until one does.
func warming(v *view, r *restart, wall time.Time) bool {
	if len(v.gpus) == 0 {
		return true
	}
	end, ok := r.warmUpEnds()
	return ok && wall.Before(end)
}

// applyStatus folds a GPU status into the view. A status older than what
// the view already holds (an accepted reservation is newer) does not
// replace the layout, but its change (a job completed or stopped) is
// always applied.
func (s *Core) applyStatus(st events.GPUStatus, at time.Time) {
	if _, known := s.view.gpus[st.GPU]; !known && !s.live.mayJoin(st.Node, st.GPU, s.now) {
		return
	}
	gs, isNew := s.view.addGPU(st)
	if isNew {
		s.dirty = true
		gs.renewLease(s.wall, s.now, s.cfg.Lease)
		logJoin(s.log, len(s.view.gpus), "GPU joined", zap.String("gpu", st.GPU), zap.String("node", st.Node), zap.String("model", st.Model))
	} else if st.Incarnation < gs.status.Incarnation || st.Incarnation <= gs.dead {
		s.stats.stale++
		return
	}
	g := gs.g
	if !isNew && st.Incarnation > gs.status.Incarnation {
		// The GPU restarted or rejoined: what ran on its old incarnation is
		// gone (a crash reported down already; a rejoin after a lost lease
		// stopped its jobs itself).
		s.stops.rejoined(st.GPU, gs.status.Jobs) // a gang's other shares, stopped already
		if lost := s.running.jobsOn(st.GPU, st.Incarnation-1, gs.status.Jobs, s.now); len(lost) > 0 {
			s.loseGPU(gs, lost, true, "GPU "+st.GPU+" on "+st.Node+" came back as incarnation "+strconv.Itoa(st.Incarnation)+" without it")
		}
		s.unconfirmed.confirmOn(st.GPU, func(inc int) bool { return inc < st.Incarnation })
		gs.version = 0
		g.Alive = true
		s.view.cluster.Touch(g)
		gs.renewLease(s.wall, s.now, s.cfg.Lease)
		s.dirty = true
		s.log.Info("GPU rejoined", zap.String("gpu", st.GPU), zap.String("node", st.Node), zap.Int("incarnation", st.Incarnation),
			zap.String("reason", st.Reason))
	}
	if !g.Alive && !isNew && (st.Change == events.ChangeWoke || st.Change == events.ChangeRejoined) &&
		st.Incarnation == gs.status.Incarnation && st.Incarnation > gs.dead {
		// Suspect until it speaks: a GPU that says it is back (its hang
		// ended, its partition healed) is tried again. Without this only a
		// heartbeat did it, and a virtual clock's nodes heartbeat once:
		// such a GPU was never tried again there.
		g.Alive = true
		s.view.cluster.Touch(g)
		s.dirty = true
		s.log.Info("GPU back", zap.String("gpu", st.GPU), zap.String("node", st.Node), zap.String("change", st.Change))
	}
	authoritative := isNew || st.Version >= gs.version || st.Incarnation != gs.status.Incarnation
	if st.Version >= gs.version || st.Incarnation != gs.status.Incarnation {
		gs.version = st.Version
		g.Allocs = g.Allocs[:0]
		g.Util = 0
		for _, sj := range st.Jobs {
			g.Allocs = append(g.Allocs, vram.Alloc{Owner: sj.JobID, Offset: sj.Offset, Size: sj.VRAM})
			g.Util += sj.Util
		}
		s.view.rebuildShares(g, s.jobs)
		s.place.holdAgain(gs)
	} else if st.JobID != "" && st.Change != events.ChangeCommitted && !heldAnew(st, s.jobs) {
		s.view.dropAlloc(g, st.JobID, s.jobs)
	}
	gs.status, gs.statusAt = st, at
	if authoritative {
		s.reconcile(gs, st)
	}
	for _, sj := range st.Jobs {
		if j, ok := s.jobs[sj.JobID]; ok && j.state == stateRunning && sj.State == events.GPUJobRunning {
			j.lastProgress, j.lastRate, j.lastAt = sj.ProgressS, sj.Rate, at
			// A gang's every share, also the first read back after a
			// restart (its only GPU so far): without its mark the gang
			// went at the pace of the shares read after it.
			if len(j.gpus) > 1 || j.spec.GPUs > 1 {
				if j.shareMarks == nil {
					j.shareMarks = map[string]progressMark{}
				}
				j.shareMarks[st.GPU] = progressMark{progress: sj.ProgressS, rate: sj.Rate, at: at}
			}
		}
	}
	switch st.Change {
	case events.ChangeCompleted:
		// Believed only from a GPU the job was placed on.
		if j, ok := s.jobs[st.JobID]; ok && st.Training != nil && slices.Contains(j.gpus, st.GPU) {
			s.training.restore(st.JobID, *st.Training, s.log)
		}
		if j, ok := s.jobs[st.JobID]; ok && s.replay.owns(j) {
			s.replay.leaseEnded(j, st.GPU)
		} else {
			s.shardDone(st.JobID, st.GPU)
		}
		s.dirty = true
	case events.ChangeExpired:
		s.lostCommit(st.JobID, st.GPU)
		s.dirty = true
	case events.ChangeAborted, events.ChangePreempted, events.ChangeReleased:
		s.dirty = true
	}
}

// heldAnew reports whether an older status's aborted reservation is of a
// job the view holds on that GPU again since (placed there, or in flight):
// the abort is of an earlier reservation.
func heldAnew(st events.GPUStatus, jobs map[string]*job) bool {
	if st.Change != events.ChangeAborted {
		return false
	}
	j, ok := jobs[st.JobID]
	if !ok {
		return false
	}
	if n := j.negotiating; n != nil {
		return slices.Contains(n.place.GPUs, st.GPU)
	}
	return j.state == stateRunning && slices.Contains(j.gpus, st.GPU)
}

// lostCommit handles a reservation that expired on a GPU although the
// scheduler committed it (the commit never arrived): the job did not run
// there, so it goes back to the queue with the progress it had kept.
func (s *Core) lostCommit(jobID, gpuID string) {
	j, ok := s.jobs[jobID]
	if !ok || j.state != stateRunning || !slices.Contains(j.gpus, gpuID) {
		return
	}
	s.log.Warn("commit lost: reservation expired on the GPU", zap.String("job", jobID), zap.String("gpu", gpuID))
	s.requeueLost(j, -1, "the reservation on "+gpuID+" expired before its commit arrived")
}

// shardDone counts one GPU's share of a job as finished; the job completes
// when every share has.
func (s *Core) shardDone(jobID, gpuID string) {
	j, ok := s.jobs[jobID]
	if !ok || j.state != stateRunning || !slices.Contains(j.gpus, gpuID) || slices.Contains(j.shardsDone, gpuID) {
		return
	}
	j.shardsDone = append(j.shardsDone, gpuID)
	j.shardsLeft--
	if j.shardsLeft > 0 || (j.relearning && len(j.gpus) < j.sharesWanted()) {
		return // (a gang being read back completes once whole: settleRelearned)
	}
	s.complete(j, s.now)
}
