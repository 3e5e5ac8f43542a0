package core

import (
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
)

// stops are the stops in flight, in the order they were sent: a job's
// shares ended on its GPUs (preempted, released, cancelled, lost), the
// answers in so far, and what follows once all are in. A GPU that never
// answers leaves the job awaiting it (waits). What follows a stop (the
// job back in the queue, its end) is the caller's, run as then.
type stops struct {
	inFlight []*stopping
	waits    *stopWaits
	// callTimeout is how long a GPU that owes an answer waits to be
	// asked again (waits).
	callTimeout time.Duration
	view        *view
	nodes       *nodeRegistry
	running     *runningJobs
	jobs        map[string]*job
	calls       *callTracker
	out         *outbox
	log         *zap.Logger
	subjects    events.Subjects
}

// pending says some stop waits for answers.
func (t *stops) pending() bool { return len(t.inFlight) > 0 }

// victims are the jobs being preempted whose stops wait for answers (a
// placement each), in the order the stops were sent.
func (t *stops) victims() []*job {
	var jobs []*job
	for _, st := range t.inFlight {
		if st.op == events.OpPreempt && st.job.placement != "" {
			jobs = append(jobs, st.job)
		}
	}
	return jobs
}

// stopping is a stop in flight: the GPUs' answers (each with the progress
// the job had there) and what follows once they are in.
type stopping struct {
	job     *job
	op      string
	at      time.Time
	calls   []ctlCall
	replies []events.ControlReply
	waiting int
	// lostAt, when not negative, is the progress a GPU that lost the job
	// last reported: the job got no further (requeueLost). lastKnown, when
	// not negative, is what the job settles when no answer says how far
	// it got (requeueRejoined), instead of the estimate.
	lostAt, lastKnown float64
	// estimate is how far the job had got when it was stopped, by the
	// marks of the GPUs it ran on then (a gang at its slowest share's
	// pace): what it settles when no answer and no lastKnown say.
	estimate float64
	then     func()
}

// rejoined bounds each stop in flight that asked gpu, now back as a new
// incarnation without its jobs, by what its last status (last) said of
// the stopped job: a gang whose GPUs rejoined is no further on than its
// least-advanced share.
// The first rejoin read starts the stop and takes the job off the running
// list, so a later one finds nothing of it to lose; without this the
// gang kept the last status of whichever share was read first, when no
// answer to the stop came to say more (a scheduler that wakes from a hang
// still cut off reads every rejoin at once).
func (t *stops) rejoined(gpu string, last []events.GPUJob) {
	for _, st := range t.inFlight {
		if st.lastKnown < 0 || !slices.ContainsFunc(st.calls, func(c ctlCall) bool { return c.gpu == gpu }) {
			continue
		}
		for _, gj := range last {
			if gj.JobID == st.job.id {
				st.lastKnown = min(st.lastKnown, gj.ProgressS)
			}
		}
	}
}

// why is what job.get says of a job whose stop is in flight: it counts
// as running, on no GPU, until the GPUs asked say how far it got (or do
// not answer in time), and only then is it preempted, lost or cancelled.
func (st *stopping) why() string {
	gpus := make([]string, len(st.calls))
	for i, c := range st.calls {
		gpus[i] = c.gpu
	}
	return "being stopped (" + st.op + "): waiting for " + strings.Join(gpus, ",") + " to say how far it got"
}

// stop ends a running job's shares with op (preempt or release) without
// waiting: the view and the node give its room back at once (each actor
// takes the stop before anything the scheduler sends it later), and once
// every GPU has answered (or timed out) the job's progress is the least
// any reported — kept up to its last checkpoint on preemption — and then
// runs. Each stop resolves once its own answers are in: one that waits
// for a hung GPU holds up no other job's.
func (t *stops) stop(j *job, op string, now, wall time.Time, then func()) {
	t.stopLost(j, op, -1, -1, now, wall, then)
}

// stopLost is stop for a job a GPU lost at progress lostAt (negative:
// unknown), which bounds the progress the stop settles; lastKnown (when
// not negative) stands in for the answers when none says how far the job
// got.
func (t *stops) stopLost(j *job, op string, lostAt, lastKnown float64, now, wall time.Time, then func()) {
	if len(j.mayRunOn()) == 0 && j.node == "" {
		j.relearned()
		then()
		return
	}
	// Estimated now, while the job still names its GPUs: without them
	// only its last mark (whichever share reported last) would count.
	st := &stopping{job: j, op: op, at: now, lostAt: lostAt, lastKnown: lastKnown, estimate: j.estimate(now), then: then}
	// Being read back after a restart, a GPU its record names and not
	// read yet (hung, cut off) may run a share of it too, and is stopped
	// as well before the job runs anywhere again.
	gpus := j.mayRunOn()
	for _, g := range gpus {
		if gs, ok := t.view.gpus[g]; ok && max(j.incarnationOn(g), gs.status.Incarnation) <= gs.dead {
			continue // the incarnation that ran it is dead: the job went with it
		}
		st.calls = append(st.calls, ctlCall{subject: t.subjects.GPUCtl(gpuNode(j, g, t.view, t.nodes), g), ctl: events.Control{Op: op, JobID: j.id}, gpu: g})
	}
	st.replies, st.waiting = make([]events.ControlReply, len(st.calls)), len(st.calls)
	if j.node != "" {
		t.out.freeAtNode(j.node, j.id)
	}
	for i, c := range st.calls {
		node := gpuNode(j, c.gpu, t.view, t.nodes)
		t.out.ask(t.calls, c, &call{node: node, gpu: c.gpu, sent: wall, stop: st, index: i})
	}
	t.view.releaseInView(j, j.node, j.gpus, t.jobs)
	j.node, j.gpus, j.shardsLeft, j.shardsDone, j.cpuEnds = "", nil, 0, nil, nil
	j.relearned()
	t.running.remove(j)
	if len(st.calls) == 0 {
		t.finish(st, wall)
		return
	}
	j.stopping = st
	t.inFlight = append(t.inFlight, st)
}

// answered records a GPU's answer to a stop and finishes the stop once
// all its answers are in. It does not wait for the stops sent before it:
// on a virtual clock the GPUs answer a restarted scheduler's reads in any
// order, and the stops those reads cause go out in that order, so a stop
// kept behind one that waits for a hung GPU would make when a lost job
// goes back to the queue depend on goroutine timing.
func (t *stops) answered(c *call, rep events.ControlReply, wall time.Time) {
	st := c.stop
	if st.waiting == 0 {
		return
	}
	st.replies[c.index] = rep
	st.waiting--
	if gs, ok := t.view.gpus[c.gpu]; ok && rep.OK && rep.Version > 0 && rep.Incarnation == gs.status.Incarnation {
		// The GPU's state as of the stop: a status it sent before it (about
		// another job, still listing this one) is older, not a word on
		// what it runs now (it would be taken for a stray and released).
		gs.version = max(gs.version, rep.Version)
	}
	if st.waiting == 0 {
		t.inFlight = slices.DeleteFunc(t.inFlight, func(other *stopping) bool { return other == st })
		st.job.stopping = nil
		t.finish(st, wall)
	}
}

// finish settles a stopped job's progress from its GPUs' answers and
// runs what follows the stop.
func (t *stops) finish(st *stopping, wall time.Time) {
	j := st.job
	done := -1.0
	for i, r := range st.replies {
		gpu := st.calls[i].gpu
		if !r.OK {
			// Unanswered (cut off, hung, restarting): the GPU may still run
			// the job, so it is not placed again until the GPU shows it
			// stopped or is declared dead (its fence stops it first).
			heard, known := t.nodes.heardOf(gpu) // named by a heartbeat, not read yet (hung)
			inc := heard.incarnation
			if gs, ok := t.view.gpus[gpu]; ok {
				inc, known = gs.status.Incarnation, true
			}
			if known {
				t.waits.add(j, gpu, inc, wall.Add(t.callTimeout))
				t.log.Warn("stop unconfirmed: the job waits for the GPU", zap.String("job", j.id), zap.String("gpu", gpu),
					zap.String("reason", r.Reason))
			}
		}
		// A GPU that no longer ran it says how far it had got when it
		// ended there (a fence): a gang is no further on than that share.
		for _, list := range [2][]events.Stopped{r.Stopped, r.Ended} {
			for _, stopped := range list {
				if stopped.JobID == j.id && (done < 0 || stopped.ProgressS < done) {
					done = stopped.ProgressS
				}
			}
		}
	}
	switch {
	case done >= 0: // an answer said
	case st.lastKnown >= 0:
		done = st.lastKnown
	default:
		done = st.estimate
	}
	if st.lostAt >= 0 {
		// The least of what every GPU said, whichever said it first: a
		// gang whose shares a restarted scheduler reads in any order
		// settles the same progress.
		done = min(done, st.lostAt)
	}
	j.endStint(st.at, done)
	if st.op == events.OpPreempt {
		j.progress = j.spec.Kept(done)
		j.lostS += done - j.progress
	} else {
		j.progress = done
	}
	j.incarnations = nil
	st.then()
}
