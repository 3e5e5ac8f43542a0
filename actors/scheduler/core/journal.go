package core

import (
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
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

// announceRestored publishes the job.restored events restore left.
func (r *restart) announceRestored(out *outbox, subjects events.Subjects, now time.Time) {
	for _, info := range r.restoredNews {
		out.emit(subjects.JobEvent(events.JobRestored), events.Type("job", events.JobRestored), info.JobID, now, info)
	}
	r.restoredNews = nil
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
	for _, j := range s.order.list {
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
