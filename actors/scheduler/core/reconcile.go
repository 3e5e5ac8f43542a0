package core

import (
	"cmp"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
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
