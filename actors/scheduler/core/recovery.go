package core

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
)

// recovery takes back a predecessor's work (owed: restart.go): the
// journal's records put back (terminal ones as records, waiting ones in
// the queue, CPU-only ones running on their nodes), the running jobs
// re-learned from the GPUs that still run them (adopt), what ended on a
// GPU while no scheduler watched (accountEnded, relearnEnded), and the
// jobs no GPU accounts for settled as lost once their GPUs have shown
// they no longer run them (settleJournaled, settleRelearned). Until then
// it holds placements back (resumingJobs). A job a node reports that no
// one submitted is stopped there (minted). What a lost or completed job
// then goes through is the core's (requeueLost, shardDone, complete).
type recovery struct {
	owed *restart
	// mintedSeen are the jobs nodes reported that no one submitted,
	// said once each (minted).
	mintedSeen map[string]bool
	// callTimeout is how often a GPU owed a stop's answer is asked again.
	callTimeout time.Duration

	clock    *instant
	jobs     map[string]*job
	order    *jobOrder
	classes  *jobClasses
	queue    *waitQueue
	view     *view
	nodes    *nodeRegistry
	running  *runningJobs
	waits    *stopWaits
	training *training
	life     *lifecycle
	writes   *journalWrites
	stats    *totals
	out      *outbox
	log      *zap.Logger
	subjects events.Subjects
	dirty    *bool // a pass is due: the core's (Dirty)
	// What the core does with what recovery finds: a job lost, a share
	// or a job completed.
	requeueLost func(j *job, lostAt float64, reason string)
	shardDone   func(jobID, gpu string)
	complete    func(j *job, at time.Time)
}

// restore puts the journal's records back (see the comment at the top).
func (rc *recovery) restore(st *durable.State) {
	for i := range st.Jobs {
		r := &st.Jobs[i]
		if _, dup := rc.jobs[r.JobID]; dup {
			continue
		}
		rc.order.saw(r.Seq)
		switch r.State {
		case events.JobPlaced, stateRunning:
			if r.CPUEnds != nil && r.Node != "" && r.Spec.GPUs == 0 {
				rc.resumeCPUJob(r)
				continue
			}
			// Accounted for like a predecessor's running job; the record
			// waits for the warm-up's end in case no GPU knows it.
			rc.owed.inherited[r.JobID] = r.Placement
			rc.owed.journaled[r.JobID] = r
			rc.view.journalHold(r, 1)
			continue
		}
		j := rc.fromRecord(r)
		switch r.State {
		case events.JobCompleted:
			rc.stats.completed++
		case events.JobCancelled:
			rc.stats.cancelled++
		case events.JobRejected:
			rc.stats.rejected++
		default: // queued (or caught between two states of one handling)
			for g, inc := range r.Awaiting {
				// A stop sent there went unanswered: not placed again until
				// that GPU shows it stopped.
				rc.waits.add(j, g, inc, rc.clock.wall.Add(rc.callTimeout))
			}
			j.state = events.JobQueued
			j.unchecked = true                                        // judged against the cluster once it has reported in
			rc.training.takeBack(j, r.Training, nil, rc.jobs, rc.log) // (a training job waits for a round)
			rc.life.enqueue(j)
			*rc.dirty = true
		}
	}
	// Every unfinished job taken back is announced, in acceptance order,
	// at the first step (the shell's bus is not up inside New): the event
	// history may lack its job.submitted (killed in between).
	for i := range st.Jobs {
		r := &st.Jobs[i]
		var info events.JobInfo
		switch {
		case rc.owed.journaled[r.JobID] == r:
			info = jobOfRecord(r).info(rc.clock.now, rc.training, false)
		case rc.jobs[r.JobID] != nil && rc.jobs[r.JobID].cpuEnds != nil:
			info = rc.jobs[r.JobID].info(rc.clock.now, rc.training, false)
		case rc.jobs[r.JobID] != nil && rc.jobs[r.JobID].state == events.JobQueued:
			info = rc.jobs[r.JobID].info(rc.clock.now, rc.training, false)
		default:
			continue
		}
		rc.owed.restoredNews = append(rc.owed.restoredNews, info)
	}
	rc.log.Info("job journal restored", zap.Int("jobs", len(st.Jobs)), zap.Int("queued", queued(rc.queue, rc.training, rc.jobs)),
		zap.Int("ran", len(rc.owed.journaled)), zap.Int("predecessor", st.Incarnation))
}

// fromRecord makes a job from its record and adds it to the scheduler's
// jobs (in acceptance order: records come sorted by seq).
func (rc *recovery) fromRecord(r *durable.Record) *job {
	j := jobOfRecord(r)
	if !j.terminal() {
		// Where an unfinished job ran is history: it runs nowhere now. A
		// finished one keeps where it last ran (job.get, job.list).
		j.node, j.gpus = "", nil
	}
	j.placement = ""
	rc.jobs[j.id] = j
	rc.order.insert(j)
	rc.classes.learn(&j.spec)
	return j
}

// resumingJobs settles what the GPUs read so far allow (settleJournaled)
// and counts the jobs a restarted scheduler is still re-learning:
// those its journal says were placed or running that no GPU has accounted
// for yet (journaled) and those read back from some of their GPUs but not
// all (relearning). While there are any, and for at most one lease from
// the restart, it places nothing: a newcomer placed meanwhile could take
// a GPU a job still being read back runs on, or the place in the queue of
// one about to be found lost, which would then preempt it or wait behind
// it — work the restart alone would have cost. Zero once the lease is
// over: a GPU that never answers must not hold the cluster up (its jobs
// are settled at journalGrace all the same).
func (rc *recovery) resumingJobs() int {
	if !rc.owed.owes() {
		return 0
	}
	// What the GPUs read since says may settle some (relearning is an
	// upper bound until then).
	rc.settleJournaled()
	return rc.stillResuming()
}

// stillResuming is resumingJobs without settling first: what a read (the
// metrics) may ask, changing no job. It may count a job the GPUs read so
// far have accounted for, which the next step that settles re-queues.
func (rc *recovery) stillResuming() int {
	if !rc.owed.owes() {
		return 0
	}
	n := len(rc.owed.journaled) + rc.owed.relearning
	if n == 0 || rc.owed.since(rc.clock.wall) > rc.owed.lease {
		return 0
	}
	return n
}

// settleJournaled re-queues the jobs the journal says ran that no GPU
// has accounted for, once each GPU they ran on has shown that it does not
// run them: read in full by this scheduler (a GPU that ran the job would
// have had it re-learned), or named by no heartbeat within two leases
// (gone with its process; a GPU alive but cut off with its node has fenced
// itself by then, as no one renewed its lease). A GPU its node names but
// that cannot be read (hung) keeps the job waiting: it fences when it
// wakes, and says so (accountEnded). They resume from the last checkpoint
// the journal holds.
func (rc *recovery) settleJournaled() {
	if rc.owed.relearning > 0 {
		defer rc.settleRelearned()
	}
	if len(rc.owed.journaled) == 0 {
		return
	}
	gone := rc.owed.graceOver(rc.clock.wall)
	ids := make([]string, 0, len(rc.owed.journaled))
	for id, r := range rc.owed.journaled {
		settled := true
		for _, g := range r.GPUs {
			if !gpuSettled(g, gone, rc.view, rc.nodes) {
				settled = false
			}
		}
		if settled {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(rc.owed.journaled[a].Seq, rc.owed.journaled[b].Seq) })
	for _, id := range ids {
		r := rc.owed.journaled[id]
		delete(rc.owed.journaled, id)
		if _, known := rc.jobs[id]; known {
			continue // re-learned from a GPU meanwhile
		}
		rc.view.journalHold(r, -1)
		delete(rc.owed.inherited, id)
		j := rc.fromRecord(r)
		if r.Node != "" {
			// Its node actor may still hold its CPU and memory (the GPUs
			// let it go): freed there too, or for good never.
			rc.out.freeAtNode(r.Node, j.id)
		}
		j.node, j.gpus, j.placement = "", nil, ""
		j.state = stateRunning // what the journal last knew
		rc.stats.lostJobs++
		j.progress = r.ProgressS
		rc.life.transition(j, events.JobLost, "no GPU ran it after the restart (placement "+r.Placement+" on "+r.Node+")", rc.clock.now)
		rc.life.transition(j, events.JobQueued, "", rc.clock.now)
		rc.training.takeBack(j, r.Training, nil, rc.jobs, rc.log) // (a training job waits for a round)
		rc.life.enqueue(j)
		*rc.dirty = true
	}
}

// gpuSettled says whether GPU g has shown whether it runs what a
// restarted scheduler's journal says it ran: read in full, or named by no
// heartbeat now that the GPUs not heard from count as gone.
func gpuSettled(g string, gone bool, v *view, nodes *nodeRegistry) bool {
	gs, known := v.gpus[g]
	if known {
		return gs.described
	}
	_, heard := nodes.heardOf(g)
	return !heard && gone
}

// resumeCPUJob takes a CPU-only job the journal says runs back as
// running on its node, to end when its record says: it holds only its
// node's CPU and memory, which the node actor keeps holding for it, and
// no GPU knows it to read it back (settleJournaled would report it lost
// and queue it again, its work lost).
func (rc *recovery) resumeCPUJob(r *durable.Record) {
	now := rc.clock.now
	rc.order.saw(r.Seq)
	j := rc.fromRecord(r)
	ends := *r.CPUEnds
	j.state, j.node, j.placement, j.cpuEnds = stateRunning, r.Node, r.Placement, &ends
	// It runs at reference speed (placed): its progress is its work less
	// what is left until its end.
	left := max(0, ends.Sub(now).Seconds())
	j.progress = max(0, j.work()-left)
	j.lastProgress, j.lastRate, j.lastAt = j.progress, 1, now
	j.stintAt, j.stintFrom, j.stintSpeed = now, j.progress, 1
	j.addHistory(events.Transition{State: stateRunning, SimTime: now,
		Reason: "taken back from the job journal after a scheduler restart (CPU-only, on " + r.Node + ")"})
	rc.running.add(j, rc.running.len())
	rc.view.journalHold(r, 1) // it holds its node's CPU and memory until it ends
	rc.stats.adopted++
	rc.log.Info("CPU-only job taken back from the journal", zap.String("job", j.id), zap.String("node", r.Node), zap.Time("ends", ends))
}

// minted stops a job a node reports that neither the journal nor the
// predecessor scheduler knows: all there is of it is the node's word, and
// a job exists only because a tenant submitted it (a node could otherwise
// mint top-priority, non-preemptible work that runs on everyone's GPUs
// once its own lapse). It is released on the GPU and said once, in the
// log and as an evt.security.job-minted event.
func (rc *recovery) minted(st events.GPUStatus, gj events.GPUJob) {
	rc.out.sendAll([]ctlCall{{subject: rc.subjects.GPUCtl(st.Node, st.GPU), ctl: events.Control{Op: events.OpRelease, Jobs: []string{gj.JobID}}, gpu: st.GPU}})
	if rc.mintedSeen == nil || len(rc.mintedSeen) >= maxMintedSeen {
		rc.mintedSeen = map[string]bool{} // bounded: a node naming ever new ids is said of again, not remembered for ever
	}
	if rc.mintedSeen[gj.JobID] {
		return
	}
	rc.mintedSeen[gj.JobID] = true
	claimed := ""
	if gj.Assignment != nil && gj.Assignment.Spec != nil {
		claimed = gj.Assignment.Spec.Tenant
	}
	rc.log.Warn("a node reports a job no one submitted: stopped there", zap.String("job", gj.JobID),
		zap.String("node", st.Node), zap.String("gpu", st.GPU), zap.String("tenant_claimed", claimed))
	rc.out.emit(rc.subjects.SecurityEvent(events.JobMinted), events.Type("security", events.JobMinted), gj.JobID, rc.clock.now,
		events.MintedJob{JobID: gj.JobID, Node: st.Node, GPU: st.GPU, TenantClaimed: claimed})
}

// maxMintedSeen bounds the minted job ids remembered so as to be said once.
const maxMintedSeen = 4096

// adopt re-learns a job a GPU runs that this scheduler does not know (it
// restarted and lost its records): the GPU kept the job as the scheduler
// accepted it, and the journal or the predecessor scheduler vouches for
// it (minted: otherwise). A gang's shards are adopted one GPU at a time.
func (rc *recovery) adopt(st events.GPUStatus, gj events.GPUJob) {
	a := gj.Assignment
	if a == nil || a.Spec == nil {
		return
	}
	now := rc.clock.now
	j, ok := rc.jobs[gj.JobID]
	if r, journaled := rc.owed.journaled[gj.JobID]; !ok && journaled {
		// The journal's record (history, preemptions, lost work) with what
		// the GPU says of it now.
		delete(rc.owed.journaled, gj.JobID)
		*rc.dirty = true           // the last one re-learned ends the hold on placements (resumingJobs)
		rc.view.journalHold(r, -1) // counted again where the GPU says it runs (adopted)
		j = rc.fromRecord(r)
		j.state, j.node, j.placement = stateRunning, adoptedNode(a, st), a.Placement
		rc.owed.relearn(j, r.GPUs)
		trained := gj.Training
		if trained == nil {
			// Read back from a GPU that lost it (its ended jobs carry no
			// model state): the journal's, as of the last round.
			trained = r.Training
		}
		rc.training.takeBack(j, trained, a, rc.jobs, rc.log)
		j.gpus, j.shardsLeft, j.shardsDone, j.shareMarks, j.incarnations = nil, 0, nil, nil, nil
		j.progress, j.lastProgress, j.lastRate, j.lastAt, j.stintAt = gj.ProgressS, gj.ProgressS, gj.Rate, now, now
		j.stintFrom, j.stintSpeed = gj.ProgressS, 1
		j.addHistory(events.Transition{State: stateRunning, SimTime: now,
			Reason: "re-learned from GPU " + st.GPU + " after a scheduler restart"})
		rc.adopted(j, st)
	} else if !ok {
		if _, vouched := rc.owed.inherited[gj.JobID]; !vouched {
			rc.minted(st, gj)
			return
		}
		spec := *a.Spec
		j = &job{id: gj.JobID, spec: spec, seq: a.Seq, submitted: a.Submitted, state: stateRunning, node: adoptedNode(a, st), placement: a.Placement,
			jobWork: jobWork{progress: gj.ProgressS, lastProgress: gj.ProgressS, lastRate: gj.Rate, lastAt: now, stintAt: now,
				stintFrom: gj.ProgressS, stintSpeed: 1}}
		rc.owed.relearn(j, nil)
		if j.submitted.IsZero() {
			j.submitted = now
		}
		started := now
		j.started, j.firstStarted = &started, &started
		j.addHistory(events.Transition{State: stateRunning, SimTime: now,
			Reason: "re-learned from GPU " + st.GPU + " after a scheduler restart"})
		rc.jobs[j.id] = j
		rc.order.add(j)
		rc.order.saw(j.seq)
		rc.classes.learn(&j.spec)
		rc.training.takeBack(j, gj.Training, a, rc.jobs, rc.log)
		rc.adopted(j, st)
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
	rc.running.addShare(j, st.GPU)
	j.shardsLeft++
	if j.incarnations == nil {
		j.incarnations = map[string]int{}
	}
	j.incarnations[st.GPU] = st.Incarnation
	rc.writes.touch(j) // the journal's record names every GPU it runs on
}

// adopted counts a job re-learned from a GPU as running there.
func (rc *recovery) adopted(j *job, st events.GPUStatus) {
	rc.running.addAdopted(j)
	if gs, ok := rc.view.gpus[st.GPU]; ok {
		// Its share there was built from the GPU's status before the job
		// was known, as a stranger's (low priority, no util, no CPU). Left
		// so until the GPU's next status, a medium job preempted a high
		// one read back after a restart, which then preempted it back, at
		// one instant again and again.
		rc.view.rebuildShares(gs.g, rc.jobs)
	}
	// (A training job spans nodes and holds none of their CPU or memory:
	// its node is "".)
	if n, ok := rc.view.nodes[j.node]; ok {
		n.CPUUsedMilli += j.spec.CPUMilli()
		n.MemUsed += int64(j.spec.Memory)
		rc.view.cluster.TouchNode(n)
	}
	rc.stats.adopted++
	delete(rc.owed.inherited, j.id)
	rc.writes.touch(j)
	rc.log.Info("job re-learned from a GPU", zap.String("job", j.id), zap.String("name", j.spec.Name), zap.String("gpu", st.GPU))
}

// accountEnded takes in the jobs the predecessor was running that ended
// on a GPU while no scheduler saw: a completion is reported; a job its GPU
// lost (a crash, or a fence when no lease came) goes back to the queue
// from its last checkpoint. Jobs this scheduler knows are its own.
func (rc *recovery) accountEnded(st events.GPUStatus) {
	for _, e := range st.Ended {
		// Only the end of the very placement the predecessor had running
		// accounts for it: an older stint's end says nothing of this one.
		if e.Assignment == nil || e.Assignment.Spec == nil || e.Assignment.Placement == "" ||
			rc.owed.inherited[e.JobID] != e.Assignment.Placement {
			continue
		}
		if _, known := rc.jobs[e.JobID]; known {
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
		rc.adopt(st, gj)
		j := rc.jobs[e.JobID]
		if j == nil {
			continue
		}
		if e.Change == events.ChangeCompleted {
			rc.log.Warn("completion learned after a restart", zap.String("job", j.id), zap.String("gpu", st.GPU))
			rc.shardDone(j.id, st.GPU)
			continue
		}
		rc.log.Warn("job lost while no scheduler watched: re-queued", zap.String("job", j.id), zap.String("gpu", st.GPU), zap.String("how", e.Change))
		if j.node != "" {
			// Its GPU let it go; its node actor still holds its CPU and
			// memory until told (requeueLost below no longer knows the
			// node): the hold would stay for good.
			rc.out.freeAtNode(j.node, j.id)
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
		rc.running.remove(j)
		rc.view.releaseNode(j, st.Node)
		rc.stats.lostJobs++
		rc.requeueLost(j, e.ProgressS, "GPU "+st.GPU+" lost it ("+e.Change+") while the scheduler was restarting")
	}
}

// relearnEnded takes in the shares of gangs being read back that ended on
// a GPU while no scheduler watched (a full status's ended jobs, of the
// very placement): a completed share counts as done; a share lost there
// (crashed, fenced, expired, preempted) breaks the gang, which is stopped
// on its other GPUs and goes back to the queue.
func (rc *recovery) relearnEnded(full events.GPUStatus) {
	for _, e := range full.Ended {
		j, ok := rc.jobs[e.JobID]
		if !ok || !j.relearning || j.state != stateRunning || !j.runsOnNode(full.Node) || slices.Contains(j.gpus, full.GPU) ||
			e.Assignment == nil || e.Assignment.Placement != j.placement {
			continue
		}
		switch e.Change {
		case events.ChangeCompleted:
			if e.Training != nil {
				rc.training.restore(j.id, *e.Training, rc.log)
			}
			j.gpus = appendShare(j, full.GPU)
			rc.running.addShare(j, full.GPU)
			j.shardsDone = append(j.shardsDone, full.GPU)
			rc.writes.touch(j)
		case events.ChangeCrashed, events.ChangeFenced, events.ChangeExpired, events.ChangePreempted:
			rc.log.Warn("a gang's share was lost while no scheduler watched: re-queued", zap.String("job", j.id),
				zap.String("gpu", full.GPU), zap.String("how", e.Change))
			rc.stats.lostJobs++
			rc.requeueLost(j, e.ProgressS, "GPU "+full.GPU+" lost its share ("+e.Change+") while the scheduler was restarting")
		}
	}
}

// settleRelearned ends the reading back of the jobs re-learned after a
// restart once every GPU the journal says each ran on is settled (as
// settleJournaled judges it; without a journal, once its gang is whole
// or the GPUs not heard from count as gone). A gang found on fewer GPUs
// than it needs lost a share while no scheduler watched, or on a GPU that
// no longer answers: it is stopped where it runs and goes back to the
// queue, not left running on part of its GPUs.
func (rc *recovery) settleRelearned() {
	gone := rc.owed.graceOver(rc.clock.wall)
	var broken, whole []*job
	rc.owed.relearning = 0
	for _, j := range rc.running.list {
		if !j.relearning {
			continue
		}
		settled := true
		if j.relearnFrom == nil {
			settled = gone || len(j.gpus) >= j.sharesWanted()
		}
		for _, g := range j.relearnFrom {
			if !slices.Contains(j.gpus, g) && !gpuSettled(g, gone, rc.view, rc.nodes) {
				settled = false
			}
		}
		if !settled {
			rc.owed.relearning++
			continue
		}
		j.relearned()
		if len(j.gpus) < j.sharesWanted() {
			broken = append(broken, j)
		} else if j.shardsLeft == 0 && len(j.shardsDone) > 0 {
			whole = append(whole, j) // every share had completed
		}
	}
	// Ended after the loop: ending a job takes it out of rc.running.
	for _, j := range whole {
		rc.complete(j, rc.clock.now)
	}
	for _, j := range broken {
		if j.state != stateRunning {
			continue
		}
		rc.stats.lostJobs++
		rc.requeueLost(j, -1, "after the scheduler's restart it ran on "+strconv.Itoa(len(j.gpus))+" of its "+
			strconv.Itoa(j.sharesWanted())+" GPUs ("+strings.Join(j.gpus, ", ")+")")
	}
}

// rejectUnfit rejects a job accepted during the warm-up that fits no GPU
// of the cluster now known (it reports whether it did).
func (rc *recovery) rejectUnfit(j *job) bool {
	if !j.unchecked || warming(rc.view, rc.owed, rc.clock.wall) {
		return false
	}
	j.unchecked = false
	fe := rc.view.feasible(rc.view.request(j))
	if fe == nil {
		return false
	}
	now := rc.clock.now
	rc.queue.remove(j)
	j.ended = &now
	rc.stats.rejected++
	rc.life.transition(j, events.JobRejected, fe.Message, rc.clock.now)
	return true
}
