package core

import (
	"cmp"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// The job journal (Config.Journal): every job whose record changed while
// a message was handled is written once, after the handling, without
// waiting for the store — except a submission, whose reply waits until
// its record is stored (an accepted job is a stored job). A scheduler that
// starts on a journal (Config.Restored) puts the jobs back: terminal ones
// as records, waiting ones in the queue in their place, and the ones that
// ran are accounted for like a predecessor's (re-learned from the GPU that
// still runs them, completed or re-queued from what the GPUs remember) and,
// when the GPUs they ran on show they no longer run them, re-queued from
// their last checkpoint (settleJournaled).

// store writes every changed record (journalWrites.touch), without
// waiting; a write refused is written again later (the shell's Rewrite).
func (s *Core) store() {
	s.writes.flush(func(j *job) { s.out.write(j.record(s.now, s.training), false) })
}

// checkpointsReached marks running jobs that passed a checkpoint since
// their record was written: a restart re-queues them from it.
func checkpointsReached(running *runningJobs, writes *journalWrites, journaled bool, now time.Time) {
	if !journaled {
		return
	}
	for _, j := range running.list {
		if j.spec.Checkpoint > 0 && j.spec.Kept(j.estimate(now)) > j.storedProgress {
			writes.touch(j)
		}
	}
}

// unstored handles a store's refusal of a job's record. A job still
// being accepted is cancelled — it never ran — and its submission is
// answered with an error naming "store"; a later write that failed is
// written again (the shell's Rewrite).
func (s *Core) unstored(j *job, why string) {
	m := j.accepting
	if m == nil {
		// Per job and per retry: the shell says once that writes fail.
		s.log.Debug("job journal write refused; writing it again", zap.String("job", j.id), zap.String("reason", why))
		return
	}
	s.log.Error("job not stored: cancelled", zap.String("job", j.id), zap.String("reason", why))
	if j.queueWhenStored {
		j.queueWhenStored = false
		s.toQueue--
	}
	j.accepting, j.answerWhenStored = nil, nil
	j.refusedByStore, j.heldEvents = true, nil // never announced
	s.cancel(j, "not stored in the job journal: "+why, func() {})
	s.out.answer(m.Reply, j, events.SubmitAnswer{ErrorReply: events.ErrorReply{Error: &model.FieldError{Field: "store", Message: "not stored, so not accepted: " + why}},
		SubmitReply: events.SubmitReply{JobID: j.id, State: j.state}})
	s.stored(j) // the submissions after it go on
}

// restore puts the journal's records back (see the comment at the top).
func (s *Core) restore(st *durable.State) {
	for i := range st.Jobs {
		r := &st.Jobs[i]
		if _, dup := s.jobs[r.JobID]; dup {
			continue
		}
		s.seq = max(s.seq, r.Seq)
		switch r.State {
		case events.JobPlaced, stateRunning:
			if r.CPUEnds != nil && r.Node != "" && r.Spec.GPUs == 0 {
				s.resumeCPUJob(r)
				continue
			}
			// Accounted for like a predecessor's running job; the record
			// waits for the warm-up's end in case no GPU knows it.
			s.restart.inherited[r.JobID] = r.Placement
			s.restart.journaled[r.JobID] = r
			s.view.journalHold(r, 1)
			continue
		}
		j := s.fromRecord(r)
		switch r.State {
		case events.JobCompleted:
			s.stats.completed++
		case events.JobCancelled:
			s.stats.cancelled++
		case events.JobRejected:
			s.stats.rejected++
		default: // queued (or caught between two states of one handling)
			for g, inc := range r.Awaiting {
				// A stop sent there went unanswered: not placed again until
				// that GPU shows it stopped.
				s.unconfirmed.add(j, g, inc, s.wall.Add(s.cfg.CallTimeout))
			}
			j.state = events.JobQueued
			j.unchecked = true                                     // judged against the cluster once it has reported in
			s.training.takeBack(j, r.Training, nil, s.jobs, s.log) // (a training job waits for a round)
			s.life.enqueue(j)
			s.dirty = true
		}
	}
	// Every unfinished job taken back is announced, in acceptance order,
	// at the first step (the shell's bus is not up inside New): the event
	// history may lack its job.submitted (killed in between).
	for i := range st.Jobs {
		r := &st.Jobs[i]
		var info events.JobInfo
		switch {
		case s.restart.journaled[r.JobID] == r:
			info = jobOfRecord(r).info(s.now, s.training, false)
		case s.jobs[r.JobID] != nil && s.jobs[r.JobID].cpuEnds != nil:
			info = s.jobs[r.JobID].info(s.now, s.training, false)
		case s.jobs[r.JobID] != nil && s.jobs[r.JobID].state == events.JobQueued:
			info = s.jobs[r.JobID].info(s.now, s.training, false)
		default:
			continue
		}
		s.restart.restoredNews = append(s.restart.restoredNews, info)
	}
	s.log.Info("job journal restored", zap.Int("jobs", len(st.Jobs)), zap.Int("queued", queued(s.queue, s.training, s.jobs)),
		zap.Int("ran", len(s.restart.journaled)), zap.Int("predecessor", st.Incarnation))
}

// fromRecord makes a job from its record and adds it to the scheduler's
// jobs (in acceptance order: records come sorted by seq).
func (s *Core) fromRecord(r *durable.Record) *job {
	j := jobOfRecord(r)
	if !j.terminal() {
		// Where an unfinished job ran is history: it runs nowhere now. A
		// finished one keeps where it last ran (job.get, job.list).
		j.node, j.gpus = "", nil
	}
	j.placement = ""
	s.jobs[j.id] = j
	i, _ := slices.BinarySearchFunc(s.order, j.seq, func(o *job, seq uint64) int { return cmp.Compare(o.seq, seq) })
	s.order = slices.Insert(s.order, i, j)
	s.classes.learn(&j.spec)
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
func (s *Core) resumingJobs() int {
	if !s.restart.owes() {
		return 0
	}
	// What the GPUs read since says may settle some (relearning is an
	// upper bound until then).
	s.settleJournaled()
	n := len(s.restart.journaled) + s.restart.relearning
	if n == 0 || s.restart.since(s.wall) > s.restart.lease {
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
func (s *Core) settleJournaled() {
	if s.restart.relearning > 0 {
		defer s.settleRelearned()
	}
	if len(s.restart.journaled) == 0 {
		return
	}
	gone := s.restart.graceOver(s.wall)
	ids := make([]string, 0, len(s.restart.journaled))
	for id, r := range s.restart.journaled {
		settled := true
		for _, g := range r.GPUs {
			if !gpuSettled(g, gone, s.view, s.nodes) {
				settled = false
			}
		}
		if settled {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(s.restart.journaled[a].Seq, s.restart.journaled[b].Seq) })
	for _, id := range ids {
		r := s.restart.journaled[id]
		delete(s.restart.journaled, id)
		if _, known := s.jobs[id]; known {
			continue // re-learned from a GPU meanwhile
		}
		s.view.journalHold(r, -1)
		delete(s.restart.inherited, id)
		j := s.fromRecord(r)
		if r.Node != "" {
			// Its node actor may still hold its CPU and memory (the GPUs
			// let it go): freed there too, or for good never.
			s.out.freeAtNode(r.Node, j.id)
		}
		j.node, j.gpus, j.placement = "", nil, ""
		j.state = stateRunning // what the journal last knew
		s.stats.lostJobs++
		j.progress = r.ProgressS
		s.life.transition(j, events.JobLost, "no GPU ran it after the restart (placement "+r.Placement+" on "+r.Node+")", s.now)
		s.life.transition(j, events.JobQueued, "", s.now)
		s.training.takeBack(j, r.Training, nil, s.jobs, s.log) // (a training job waits for a round)
		s.life.enqueue(j)
		s.dirty = true
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

// announceRestored publishes the job.restored events restore left.
func (r *restart) announceRestored(out *outbox, subjects events.Subjects, now time.Time) {
	for _, info := range r.restoredNews {
		out.emit(subjects.JobEvent(events.JobRestored), events.Type("job", events.JobRestored), info.JobID, now, info)
	}
	r.restoredNews = nil
}

// resumeCPUJob takes a CPU-only job the journal says runs back as
// running on its node, to end when its record says: it holds only its
// node's CPU and memory, which the node actor keeps holding for it, and
// no GPU knows it to read it back (settleJournaled would report it lost
// and queue it again, its work lost).
func (s *Core) resumeCPUJob(r *durable.Record) {
	now := s.now
	s.seq = max(s.seq, r.Seq)
	j := s.fromRecord(r)
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
	s.running.add(j, s.running.len())
	s.view.journalHold(r, 1) // it holds its node's CPU and memory until it ends
	s.stats.adopted++
	s.log.Info("CPU-only job taken back from the journal", zap.String("job", j.id), zap.String("node", r.Node), zap.Time("ends", ends))
}

// Unanswered is a submission a scheduler took and had not answered when
// it died: the job it made and the reply subject its client waits on.
type Unanswered struct {
	JobID, Reply string
}

// Unanswered lists the submissions this scheduler took and has not
// answered, in the order they came: those waiting for the store's word
// on their first record or for their placement's answers, and the
// submissions repeating their idempotency keys. A scheduler killed then
// never answers them, and a client waiting without a deadline (the job
// generator) waits for good: its supervisor hands them to the successor
// (Config.Unanswered). Found by reading: the window is one store or
// reservation round trip, and no run showed it.
func (s *Core) Unanswered() []Unanswered {
	var out []Unanswered
	for _, j := range s.order {
		if j.answer != nil {
			continue
		}
		if m := j.accepting; m != nil && m.Reply != "" {
			out = append(out, Unanswered{JobID: j.id, Reply: m.Reply})
		} else if n := j.negotiating; n != nil && n.a.submit != nil && n.a.submit.Reply != "" {
			out = append(out, Unanswered{JobID: j.id, Reply: n.a.submit.Reply})
		}
		for _, w := range j.answerWaiters {
			out = append(out, Unanswered{JobID: j.id, Reply: w})
		}
	}
	return out
}

// answerPredecessors answers the submissions the predecessor took and
// never answered (Config.Unanswered): a job this scheduler knows (its
// journal kept it) as it is now, as a repeated submission is answered;
// one it does not know was never accepted — its record never reached
// the journal, or there is none — and is answered "no responders", so
// that its client sends it again.
func (r *restart) answerPredecessors(jobs map[string]*job, out *outbox, log *zap.Logger) {
	for _, u := range r.unanswered {
		j, ok := jobs[u.JobID]
		if !ok {
			out.noResponders(u.Reply)
			continue
		}
		out.replyTo(u.Reply, answerNow(j))
	}
	log.Info("the predecessor's unanswered submissions answered", zap.Int("submissions", len(r.unanswered)))
	r.unanswered = nil
}

// record is j as the journal keeps it at now; tr is the training rounds'
// state, nil without.
func (j *job) record(now time.Time, tr *training) *durable.Record {
	progress := j.progress
	if j.state == stateRunning || j.state == events.JobPlaced {
		// While it runs, the work it would keep if lost now.
		progress = max(progress, j.spec.Kept(j.estimate(now)))
		j.storedProgress = progress
	}
	// Read back on part of its GPUs so far, the record keeps every GPU it
	// may run on, for a successor that restarts before the rest are read
	// (a gang recorded on the GPUs read by then would be taken for whole,
	// or broken, by the next one).
	gpus := j.mayRunOn()
	if st := j.stopping; st != nil {
		// A stop in flight: its GPUs may run the job until they answer,
		// and a successor must look for it there. A record naming none
		// (stopLost has let them go) was taken by a scheduler restarted
		// meanwhile for a job that ran nowhere: placed again while a GPU
		// the stop had not reached still ran it.
		gpus = slices.Clone(gpus)
		for _, c := range st.calls {
			if !slices.Contains(gpus, c.gpu) {
				gpus = append(gpus, c.gpu)
			}
		}
	}
	return &durable.Record{JobID: j.id, Spec: j.spec, Seq: j.seq, Submitted: j.submitted, State: j.state, Reason: j.reason,
		ProgressS: progress, Placement: j.placement, Node: j.node, GPUs: gpus, Preemptions: j.preemptions, LostWorkS: j.lostS,
		Started: j.started, Ended: j.ended, History: j.history, HistoryDropped: j.historyDropped, Awaiting: j.awaiting, Training: tr.state(j), CPUEnds: j.cpuEnds, At: now}
}

// jobOfRecord is the job a record describes, known to no index.
func jobOfRecord(r *durable.Record) *job {
	return &job{id: r.JobID, spec: r.Spec, seq: r.Seq, submitted: r.Submitted, state: r.State, reason: r.Reason,
		preemptions: r.Preemptions, started: r.Started, ended: r.Ended,
		history: slices.Clone(r.History), historyDropped: r.HistoryDropped, node: r.Node, gpus: r.GPUs, placement: r.Placement,
		jobWork: jobWork{progress: r.ProgressS, lostS: r.LostWorkS, storedProgress: r.ProgressS}}
}
