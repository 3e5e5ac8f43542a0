package core

import (
	"math/rand/v2"
	"slices"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
)

// intake takes submissions in: each checked (size, fields, the tenant
// the server vouched for, admission, training and typed checks), a
// repeat answered as the first, the store's refusal, a tenant's rate and
// queue bound applied; a job accepted is numbered, stored (with a
// journal: it goes on only once its record is, in the order the
// submissions came) and tried at once when nothing waits ahead of it, or
// queued. Training and replayed jobs wait for their rounds. A job also
// leaves here (cancel).
type intake struct {
	// accepting are the submissions whose first record is being stored,
	// in the order they came: each goes on (accepted) once it and every
	// one before it has an answer from the store. toQueue counts the jobs
	// not placed at once that go to the queue once stored: a submission
	// behind them is not tried at once either.
	accepting []*job
	toQueue   int
	// msgIDs are the Nats-Msg-Ids submissions carried (idempotency);
	// rates the tenants' submission allowances (tenantrates.go); ids the
	// seeded source of job ids (Config.IDSeed).
	msgIDs *msgIDs
	rates  *tenantRates
	ids    *rand.ChaCha8

	cfg      *Config
	clock    *instant
	dirty    *bool // a pass is due: the core's (Dirty)
	jobs     map[string]*job
	order    *jobOrder
	classes  *jobClasses
	queue    *waitQueue
	view     *view
	plugins  *policy.Profile
	running  *runningJobs
	training *training
	replay   *replayRounds
	owed     *restart
	life     *lifecycle
	stats    *totals
	writes   *journalWrites
	stops    *stops
	place    *placer
	recovery *recovery
	out      *outbox
	log      *zap.Logger
}

// submit takes a submission (job.submit) from tenant, the one the
// server vouched for.
func (in *intake) submit(m *Msg, tenant string) {
	if fe := events.CheckSize(m.Data); fe != nil {
		in.out.reply(m, events.ErrorReply{Error: fe})
		return
	}
	req, fe := events.DecodeSubmitRequest(m.Data)
	if fe == nil && tenant != "" {
		fe = ownTenant(&req, tenant)
	}
	var spec events.Job
	if fe == nil {
		spec, fe = req.Job()
	}
	if fe == nil && in.plugins.Admit != nil {
		// Refused before it is a job: what its tenant may never have.
		if st := in.plugins.AdmitSubmit(admitJob(&spec)); st != nil {
			fe = st.FieldError()
		}
	}
	if fe == nil && spec.Training != nil {
		fe = in.training.check(&spec)
	}
	if fe == nil && spec.Typed() {
		fe = checkTyped(&spec, in.cfg.Throughputs)
	}
	if fe != nil {
		in.out.reply(m, events.ErrorReply{Error: fe})
		return
	}
	// A Nats-Msg-Id is a key in the sender's tenant only: another
	// tenant's same id is a new job, and no answer says it was used.
	msgKey := m.MsgID
	if msgKey != "" {
		msgKey = tenant + "\x00" + msgKey
	}
	if j := submitted(req.JobID, msgKey, in.jobs, in.msgIDs, in.clock.wall); j != nil {
		in.out.resubmitted(m, j, tenant, submissionOf(req))
		return
	}
	if fe := in.writes.refusal(); fe != nil {
		in.out.reply(m, events.ErrorReply{Error: fe})
		return
	}
	if fe := in.rates.take(tenant, in.clock.wall); fe != nil {
		in.out.reply(m, events.ErrorReply{Error: fe})
		return
	}
	if n := in.queue.of(spec.Tenant); in.cfg.TenantQueue > 0 && n >= in.cfg.TenantQueue {
		// A tenant cannot grow the queue (and the scheduler's memory and
		// every pass over it) without bound.
		in.out.reply(m, events.ErrorReply{Error: model.Errorf("tenant", "%s has %d jobs waiting, the most one tenant may have queued: not accepted (cancel some, or wait for them to start)", spec.Tenant, n)})
		return
	}
	seq := in.order.next()
	now := in.clock.now
	id := req.JobID
	if id == "" {
		id = newJobID(in.ids)
	}
	j := &job{id: id, spec: spec, seq: seq, submitted: now}
	if req.JobID != "" || m.MsgID != "" {
		j.submission = submissionOf(req)
	}
	in.msgIDs.remember(msgKey, j.id, in.clock.wall)
	if spec.Training != nil {
		in.submitTraining(j, m)
		return
	}
	if in.replay != nil && spec.Typed() {
		in.submitReplayed(j, m, req.ArrivalS)
		return
	}
	if fe := in.view.feasible(in.view.request(j)); fe != nil && warming(in.view, in.owed, in.clock.wall) {
		// A restarted scheduler still hearing from the GPUs cannot tell
		// "fits nowhere" from "not heard of yet": the job waits, and the
		// first pass after the warm-up judges it.
		j.unchecked = true
	} else if fe != nil {
		in.jobs[j.id] = j
		in.order.add(j)
		j.addHistory(events.Transition{State: events.JobSubmitted, SimTime: now})
		in.life.transition(j, events.JobRejected, fe.Message, in.clock.now)
		j.ended = &now
		in.stats.rejected++
		in.out.answer(m.Reply, j, events.SubmitAnswer{ErrorReply: events.ErrorReply{Error: fe},
			SubmitReply: events.SubmitReply{JobID: j.id, State: events.JobRejected}})
		return
	}
	in.jobs[j.id] = j
	in.order.add(j)
	in.classes.learn(&spec)
	j.unannounced = in.cfg.Journaled
	in.life.transition(j, events.JobSubmitted, "", in.clock.now)
	in.life.transition(j, events.JobQueued, "", in.clock.now)
	if in.cfg.Journaled {
		// Accepted once stored, and committed only then, so that a job
		// whose record the store refuses never runs; its reservations go
		// out meanwhile (the write and the negotiation in parallel).
		in.accept(j, m)
	}
	in.accepted(j, m)
}

// accept writes a new job's first record and waits for the store's answer
// (Input.Stored, Input.Unstored) before the job goes on (accepted).
func (in *intake) accept(j *job, m *Msg) {
	j.accepting = m
	in.accepting = append(in.accepting, j)
	j.touched = false
	in.out.write(j.record(in.clock.now, in.training), true)
}

// stored takes the store's word that j's first record is stored; the
// submissions go on in the order they came: a job whose placement was
// waiting for it is committed, one that was not placed at once is queued.
func (in *intake) stored(j *job) {
	j.storeAnswered = true
	for len(in.accepting) > 0 && in.accepting[0].storeAnswered {
		next := in.accepting[0]
		in.accepting = slices.Delete(in.accepting, 0, 1)
		in.out.announce(next)
		if m := next.accepting; m != nil {
			next.accepting = nil
			switch {
			case next.queueWhenStored:
				next.queueWhenStored = false
				in.toQueue--
				in.notPlacedAtOnce(next, m)
			case next.answerWhenStored != nil:
				in.out.answer(m.Reply, next, next.answerWhenStored)
				next.answerWhenStored = nil
			}
		}
	}
	in.place.resolveReady()
}

// accepted takes a new job on: with nothing waiting ahead of it, it is
// tried at once, so that the reply can say "placed"; otherwise the next
// pass takes the queue in order (once the job is stored, with a journal).
// On a virtual clock the pass decides, once everything else that happens
// at this instant has happened.
func (in *intake) accepted(j *job, m *Msg) {
	if j.terminal() {
		return
	}
	if ((in.queue.len() == 0 && in.toQueue == 0 && !in.cfg.Virtual) || in.cfg.DropUnschedulable) && admitsNow(j, in.plugins, in.running) && in.recovery.resumingJobs() == 0 {
		if in.queue.len() == 0 {
			clear(in.view.held) // holds belong to waiting jobs, and none wait
		}
		a := &attempt{job: j, submit: m}
		if in.place.try(a) == tryWait {
			// Victims are chosen on a settled view: the next pass does.
			in.place.failed(a)
		}
		return
	}
	in.notPlacedAtOnce(j, m)
}

// acceptForRounds takes on a job that waits for rounds (training,
// replayed; its submitted and queued transitions made after this): it is
// answered "queued" at once without a journal, and with one once its
// first record is stored, its events held until then (as accept does
// for the others): an answer never names a job the store does not hold.
func (in *intake) acceptForRounds(j *job, m *Msg) {
	reply := events.SubmitReply{JobID: j.id, State: events.JobQueued}
	if !in.cfg.Journaled {
		in.out.answer(m.Reply, j, reply)
		return
	}
	j.answerWhenStored = reply
	in.accept(j, m)
}

// notPlacedAtOnce answers a submission not placed at once: rejected on a
// cluster that drops such jobs (replay), queued otherwise — once the job is
// stored.
func (in *intake) notPlacedAtOnce(j *job, m *Msg) {
	if j.accepting != nil {
		j.queueWhenStored = true
		in.toQueue++
		return
	}
	if in.cfg.DropUnschedulable {
		now := in.clock.now
		reason := "fits nowhere now and this cluster drops such jobs (replay): " + policy.Why(in.view.sorted(), in.view.request(j))
		in.life.transition(j, events.JobRejected, reason, in.clock.now)
		j.ended = &now
		in.stats.rejected++
		in.out.answer(m.Reply, j, events.SubmitReply{JobID: j.id, State: events.JobRejected, Reason: reason})
		return
	}
	in.life.enqueue(j)
	*in.dirty = true
	in.out.answer(m.Reply, j, events.SubmitReply{JobID: j.id, State: events.JobQueued})
}

// cancel ends a job that is not over yet: out of the queue, or stopped
// where it runs; then runs (once it has stopped).
func (in *intake) cancel(j *job, reason string, then func()) {
	cancelled := func() {
		now := in.clock.now
		j.ended = &now
		in.stats.cancelled++
		in.life.transition(j, events.JobCancelled, reason, in.clock.now)
		*in.dirty = true
		then()
	}
	if j.state == events.JobQueued {
		in.queue.remove(j)
		cancelled()
		return
	}
	in.stops.stop(j, events.OpRelease, in.clock.now, in.clock.wall, cancelled)
}

// submitTraining takes a training job on: it waits for the next round.
func (in *intake) submitTraining(j *job, m *Msg) {
	if !in.training.add(j, in.clock.now) {
		return
	}
	in.takeForRounds(j, m, "")
}

// takeForRounds takes on a job its rounds have taken: known, submitted,
// queued (saying why it waits, when pending does) and answered
// (acceptForRounds).
func (in *intake) takeForRounds(j *job, m *Msg, pending string) {
	in.jobs[j.id] = j
	in.order.add(j)
	j.unannounced = in.cfg.Journaled
	in.life.transition(j, events.JobSubmitted, "", in.clock.now)
	in.life.transition(j, events.JobQueued, "", in.clock.now)
	if pending != "" {
		in.life.pending(j, pending, in.clock.now)
	}
	in.acceptForRounds(j, m)
}

// submitReplayed takes a typed job on as an arrival of the replayed
// rounds: arrivalS, when the submission gives it, is its arrival to more
// precision than the clock (it must be the clock's now to the
// nanosecond); it waits for the next round.
func (in *intake) submitReplayed(j *job, m *Msg, arrivalS *float64) {
	arrival, fe := in.replay.arrive(j, arrivalS)
	if fe != nil {
		in.out.reply(m, events.ErrorReply{Error: fe})
		return
	}
	in.takeForRounds(j, m, "waits for a replayed round")
	in.replay.arrived(arrival)
}

// unstored handles a store's refusal of a job's record. A job still
// being accepted is cancelled — it never ran — and its submission is
// answered with an error naming "store"; a later write that failed is
// written again (the shell's Rewrite).
func (in *intake) unstored(j *job, why string) {
	m := j.accepting
	if m == nil {
		// Per job and per retry: the shell says once that writes fail.
		in.log.Debug("job journal write refused; writing it again", zap.String("job", j.id), zap.String("reason", why))
		return
	}
	in.log.Error("job not stored: cancelled", zap.String("job", j.id), zap.String("reason", why))
	if j.queueWhenStored {
		j.queueWhenStored = false
		in.toQueue--
	}
	j.accepting, j.answerWhenStored = nil, nil
	j.refusedByStore, j.heldEvents = true, nil // never announced
	in.cancel(j, "not stored in the job journal: "+why, func() {})
	in.out.answer(m.Reply, j, events.SubmitAnswer{ErrorReply: events.ErrorReply{Error: &model.FieldError{Field: "store", Message: "not stored, so not accepted: " + why}},
		SubmitReply: events.SubmitReply{JobID: j.id, State: j.state}})
	in.stored(j) // the submissions after it go on
}
