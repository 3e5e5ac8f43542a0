package core

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// minted stops a job a node reports that neither the journal nor the
// predecessor scheduler knows: all there is of it is the node's word, and
// a job exists only because a tenant submitted it (a node could otherwise
// mint top-priority, non-preemptible work that runs on everyone's GPUs
// once its own lapse). It is released on the GPU and said once, in the
// log and as an evt.security.job-minted event.
func (s *Core) minted(st events.GPUStatus, gj events.GPUJob) {
	s.out.sendAll([]ctlCall{{subject: s.cfg.Subjects.GPUCtl(st.Node, st.GPU), ctl: events.Control{Op: events.OpRelease, Jobs: []string{gj.JobID}}, gpu: st.GPU}})
	if s.mintedSeen == nil || len(s.mintedSeen) >= maxMintedSeen {
		s.mintedSeen = map[string]bool{} // bounded: a node naming ever new ids is said of again, not remembered for ever
	}
	if s.mintedSeen[gj.JobID] {
		return
	}
	s.mintedSeen[gj.JobID] = true
	claimed := ""
	if gj.Assignment != nil && gj.Assignment.Spec != nil {
		claimed = gj.Assignment.Spec.Tenant
	}
	s.log.Warn("a node reports a job no one submitted: stopped there", zap.String("job", gj.JobID),
		zap.String("node", st.Node), zap.String("gpu", st.GPU), zap.String("tenant_claimed", claimed))
	s.out.emit(s.cfg.Subjects.SecurityEvent(events.JobMinted), events.Type("security", events.JobMinted), gj.JobID, s.now,
		events.MintedJob{JobID: gj.JobID, Node: st.Node, GPU: st.GPU, TenantClaimed: claimed})
}

// maxMintedSeen bounds the minted job ids remembered so as to be said once.
const maxMintedSeen = 4096

// adopt re-learns a job a GPU runs that this scheduler does not know (it
// restarted and lost its records): the GPU kept the job as the scheduler
// accepted it, and the journal or the predecessor scheduler vouches for
// it (minted: otherwise). A gang's shards are adopted one GPU at a time.
func (s *Core) adopt(st events.GPUStatus, gj events.GPUJob) {
	a := gj.Assignment
	if a == nil || a.Spec == nil {
		return
	}
	now := s.now
	j, ok := s.jobs[gj.JobID]
	if r, journaled := s.restart.journaled[gj.JobID]; !ok && journaled {
		// The journal's record (history, preemptions, lost work) with what
		// the GPU says of it now.
		delete(s.restart.journaled, gj.JobID)
		s.dirty = true            // the last one re-learned ends the hold on placements (resumingJobs)
		s.view.journalHold(r, -1) // counted again where the GPU says it runs (adopted)
		j = s.fromRecord(r)
		j.state, j.node, j.placement = stateRunning, adoptedNode(a, st), a.Placement
		s.restart.relearn(j, r.GPUs)
		trained := gj.Training
		if trained == nil {
			// Read back from a GPU that lost it (its ended jobs carry no
			// model state): the journal's, as of the last round.
			trained = r.Training
		}
		s.training.takeBack(j, trained, a, s.jobs, s.log)
		j.gpus, j.shardsLeft, j.shardsDone, j.shareMarks, j.incarnations = nil, 0, nil, nil, nil
		j.progress, j.lastProgress, j.lastRate, j.lastAt, j.stintAt = gj.ProgressS, gj.ProgressS, gj.Rate, now, now
		j.stintFrom, j.stintSpeed = gj.ProgressS, 1
		j.addHistory(events.Transition{State: stateRunning, SimTime: now,
			Reason: "re-learned from GPU " + st.GPU + " after a scheduler restart"})
		s.adopted(j, st)
	} else if !ok {
		if _, vouched := s.restart.inherited[gj.JobID]; !vouched {
			s.minted(st, gj)
			return
		}
		spec := *a.Spec
		j = &job{id: gj.JobID, spec: spec, seq: a.Seq, submitted: a.Submitted, state: stateRunning, node: adoptedNode(a, st), placement: a.Placement,
			jobWork: jobWork{progress: gj.ProgressS, lastProgress: gj.ProgressS, lastRate: gj.Rate, lastAt: now, stintAt: now,
				stintFrom: gj.ProgressS, stintSpeed: 1}}
		s.restart.relearn(j, nil)
		if j.submitted.IsZero() {
			j.submitted = now
		}
		started := now
		j.started, j.firstStarted = &started, &started
		j.addHistory(events.Transition{State: stateRunning, SimTime: now,
			Reason: "re-learned from GPU " + st.GPU + " after a scheduler restart"})
		s.jobs[j.id] = j
		s.order = append(s.order, j)
		s.seq = max(s.seq, j.seq)
		s.classes.learn(&j.spec)
		s.training.takeBack(j, gj.Training, a, s.jobs, s.log)
		s.adopted(j, st)
	}
	if j.state != stateRunning || !j.runsOnNode(st.Node) || slices.Contains(j.gpus, st.GPU) || a.Placement != j.placement {
		return
	}
	if len(j.gpus) > 0 && j.relearning {
		// A further share of a gang being read back: the gang is where
		// its slowest share is, whichever GPU was read first.
		j.progress, j.lastProgress = min(j.progress, gj.ProgressS), min(j.lastProgress, gj.ProgressS)
		j.stintFrom, j.lastRate = min(j.stintFrom, gj.ProgressS), min(j.lastRate, gj.Rate)
	}
	j.gpus = appendShare(j, st.GPU)
	s.running.addShare(j, st.GPU)
	j.shardsLeft++
	if j.incarnations == nil {
		j.incarnations = map[string]int{}
	}
	j.incarnations[st.GPU] = st.Incarnation
	s.writes.touch(j) // the journal's record names every GPU it runs on
}

// adopted counts a job re-learned from a GPU as running there.
func (s *Core) adopted(j *job, st events.GPUStatus) {
	s.running.addAdopted(j)
	if gs, ok := s.view.gpus[st.GPU]; ok {
		// Its share there was built from the GPU's status before the job
		// was known, as a stranger's (low priority, no util, no CPU). Left
		// so until the GPU's next status, a medium job preempted a high
		// one read back after a restart, which then preempted it back, at
		// one instant again and again.
		s.view.rebuildShares(gs.g, s.jobs)
	}
	// (A training job spans nodes and holds none of their CPU or memory:
	// its node is "".)
	if n, ok := s.view.nodes[j.node]; ok {
		n.CPUUsedMilli += j.spec.CPUMilli()
		n.MemUsed += int64(j.spec.Memory)
		s.view.cluster.TouchNode(n)
	}
	s.stats.adopted++
	delete(s.restart.inherited, j.id)
	s.writes.touch(j)
	s.log.Info("job re-learned from a GPU", zap.String("job", j.id), zap.String("name", j.spec.Name), zap.String("gpu", st.GPU))
}

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
			s.adopt(full, gj)
		}
	}
	if catchUp {
		s.accountEnded(full)
	}
	s.relearnEnded(full)
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

// accountEnded takes in the jobs the predecessor was running that ended
// on a GPU while no scheduler saw: a completion is reported; a job its GPU
// lost (a crash, or a fence when no lease came) goes back to the queue
// from its last checkpoint. Jobs this scheduler knows are its own.
func (s *Core) accountEnded(st events.GPUStatus) {
	for _, e := range st.Ended {
		// Only the end of the very placement the predecessor had running
		// accounts for it: an older stint's end says nothing of this one.
		if e.Assignment == nil || e.Assignment.Spec == nil || e.Assignment.Placement == "" ||
			s.restart.inherited[e.JobID] != e.Assignment.Placement {
			continue
		}
		if _, known := s.jobs[e.JobID]; known {
			continue
		}
		switch e.Change {
		case events.ChangeCompleted, events.ChangeCrashed, events.ChangeFenced, events.ChangeExpired, events.ChangePreempted:
			// "expired": placed, but its commit never reached the GPU
			// (lost with a partition or a crash) — it never ran there.
			// "preempted": the predecessor stopped it and died before it
			// took the job back into its queue.
		default:
			continue // stopped by a scheduler: not this one's to account for
		}
		// A training job's state when it left: a completion keeps its
		// completion second (without it the job came back with the
		// state it was placed with, and ended with none).
		gj := events.GPUJob{JobID: e.JobID, ProgressS: e.ProgressS, Assignment: e.Assignment, State: events.GPUJobRunning, Training: e.Training}
		s.adopt(st, gj)
		j := s.jobs[e.JobID]
		if j == nil {
			continue
		}
		if e.Change == events.ChangeCompleted {
			s.log.Warn("completion learned after a restart", zap.String("job", j.id), zap.String("gpu", st.GPU))
			s.shardDone(j.id, st.GPU)
			continue
		}
		s.log.Warn("job lost while no scheduler watched: re-queued", zap.String("job", j.id), zap.String("gpu", st.GPU), zap.String("how", e.Change))
		if j.node != "" {
			// Its GPU let it go; its node actor still holds its CPU and
			// memory until told (requeueLost below no longer knows the
			// node): the hold would stay for good.
			s.out.freeAtNode(j.node, j.id)
		}
		j.node, j.gpus, j.shardsLeft, j.shardsDone = "", nil, 0, nil
		// A gang's other GPUs, which its record names, may still run
		// their shares (one hung, unread): they are stopped, and the job
		// waits for those that do not answer, before it runs anywhere
		// again (requeueLost's stop). Queued at once, it would run twice:
		// on a new placement and on a hung GPU whose lease has not run
		// out. This GPU is told too, though it lost the
		// job: then every GPU of the gang hears the same stop whichever
		// answered the restarted scheduler first (a GPU's drop fault draws
		// one number per message it sends, so one more message to one GPU
		// changes what it drops later), and each says how far its share
		// had got.
		s.running.remove(j)
		s.view.releaseNode(j, st.Node)
		s.stats.lostJobs++
		s.requeueLost(j, e.ProgressS, "GPU "+st.GPU+" lost it ("+e.Change+") while the scheduler was restarting")
	}
}

// relearnEnded takes in the shares of gangs being read back that ended on
// a GPU while no scheduler watched (a full status's ended jobs, of the
// very placement): a completed share counts as done; a share lost there
// (crashed, fenced, expired, preempted) breaks the gang, which is stopped
// on its other GPUs and goes back to the queue.
func (s *Core) relearnEnded(full events.GPUStatus) {
	for _, e := range full.Ended {
		j, ok := s.jobs[e.JobID]
		if !ok || !j.relearning || j.state != stateRunning || !j.runsOnNode(full.Node) || slices.Contains(j.gpus, full.GPU) ||
			e.Assignment == nil || e.Assignment.Placement != j.placement {
			continue
		}
		switch e.Change {
		case events.ChangeCompleted:
			if e.Training != nil {
				s.training.restore(j.id, *e.Training, s.log)
			}
			j.gpus = appendShare(j, full.GPU)
			s.running.addShare(j, full.GPU)
			j.shardsDone = append(j.shardsDone, full.GPU)
			s.writes.touch(j)
		case events.ChangeCrashed, events.ChangeFenced, events.ChangeExpired, events.ChangePreempted:
			s.log.Warn("a gang's share was lost while no scheduler watched: re-queued", zap.String("job", j.id),
				zap.String("gpu", full.GPU), zap.String("how", e.Change))
			s.stats.lostJobs++
			s.requeueLost(j, e.ProgressS, "GPU "+full.GPU+" lost its share ("+e.Change+") while the scheduler was restarting")
		}
	}
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

// settleRelearned ends the reading back of the jobs re-learned after a
// restart once every GPU the journal says each ran on is settled (as
// settleJournaled judges it; without a journal, once its gang is whole
// or the GPUs not heard from count as gone). A gang found on fewer GPUs
// than it needs lost a share while no scheduler watched, or on a GPU that
// no longer answers: it is stopped where it runs and goes back to the
// queue, not left running on part of its GPUs.
func (s *Core) settleRelearned() {
	gone := s.restart.graceOver(s.wall)
	var broken, whole []*job
	s.restart.relearning = 0
	for _, j := range s.running.list {
		if !j.relearning {
			continue
		}
		settled := true
		if j.relearnFrom == nil {
			settled = gone || len(j.gpus) >= j.sharesWanted()
		}
		for _, g := range j.relearnFrom {
			if !slices.Contains(j.gpus, g) && !gpuSettled(g, gone, s.view, s.nodes) {
				settled = false
			}
		}
		if !settled {
			s.restart.relearning++
			continue
		}
		j.relearned()
		if len(j.gpus) < j.sharesWanted() {
			broken = append(broken, j)
		} else if j.shardsLeft == 0 && len(j.shardsDone) > 0 {
			whole = append(whole, j) // every share had completed
		}
	}
	// Ended after the loop: ending a job takes it out of s.running.
	for _, j := range whole {
		s.complete(j, s.now)
	}
	for _, j := range broken {
		if j.state != stateRunning {
			continue
		}
		s.stats.lostJobs++
		s.requeueLost(j, -1, "after the scheduler's restart it ran on "+strconv.Itoa(len(j.gpus))+" of its "+
			strconv.Itoa(j.sharesWanted())+" GPUs ("+strings.Join(j.gpus, ", ")+")")
	}
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

// rejectUnfit rejects a job accepted during the warm-up that fits no GPU
// of the cluster now known (it reports whether it did).
func (s *Core) rejectUnfit(j *job) bool {
	if !j.unchecked || warming(s.view, s.restart, s.wall) {
		return false
	}
	j.unchecked = false
	fe := s.view.feasible(s.view.request(j))
	if fe == nil {
		return false
	}
	now := s.now
	s.queue.remove(j)
	j.ended = &now
	s.stats.rejected++
	s.life.transition(j, events.JobRejected, fe.Message, s.now)
	return true
}
