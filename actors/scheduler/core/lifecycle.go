package core

import (
	"time"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/policy"
)

// lifecycle moves jobs from state to state and says so: each change goes
// in the job's history, out as a job event and to the journal; a waiting
// job's pending reason goes out once per change. It also knows where a
// job waits when it goes back to waiting: in the queue in order, for the
// next training round, or for the replayed rounds.
type lifecycle struct {
	queue    *waitQueue
	plugins  *policy.Profile
	training *training
	replay   *replayRounds
	writes   *journalWrites
	out      *outbox
	subjects events.Subjects
}

// transition moves a job to state and publishes the event for it.
func (l *lifecycle) transition(j *job, state, reason string, now time.Time) {
	evType := state
	if state == stateRunning {
		evType = events.JobStarted
	}
	j.state = state
	j.reason = reason
	j.addHistory(events.Transition{State: state, SimTime: now, Reason: reason})
	l.writes.touch(j)
	l.out.emitAbout(j, l.subjects.JobEvent(evType), events.Type("job", evType), now, j.info(now, l.training, false))
}

// pending gives a job waiting for a place its reason, said once per
// change (sched.pending).
func (l *lifecycle) pending(j *job, reason string, now time.Time) {
	if j.reason == reason {
		return
	}
	j.reason = reason
	l.out.emit(l.subjects.SchedEvent(events.SchedPending), events.Type("sched", events.SchedPending), j.id,
		now, events.Pending{JobID: j.id, Name: j.spec.Name, Reason: reason})
}

// enqueue inserts j in queue order (a training job is not queued: the
// next training round allocates it again).
func (l *lifecycle) enqueue(j *job) {
	if j.spec.Training != nil {
		l.training.requeued(j)
		return
	}
	if l.replay.owns(j) {
		return // the replayed rounds place it, not the queue
	}
	l.queue.insert(j, l.plugins.Order)
}
