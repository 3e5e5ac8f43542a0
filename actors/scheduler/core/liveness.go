package core

import (
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// DefaultLease is how long the scheduler waits without a heartbeat that
// renews a GPU before it declares the GPU dead: three default heartbeat
// periods, so one late heartbeat is not a death.
const DefaultLease = 6 * time.Second

// DefaultVirtualLease is the lease on a virtual clock, in simulated time:
// the wall default at the scaled clock's default speed (6 s × 120 = 12
// simulated minutes, three of node.DefaultVirtualHeartbeat), so a virtual
// run declares a hung or cut-off GPU dead when the live demo would.
const DefaultVirtualLease = DefaultLease * 120

// liveness is the scheduler's word on which GPUs and nodes are alive. It
// takes the nodes' heartbeats (which GPUs each names, within its bound),
// grants and renews the GPUs' leases from them, declares a node down
// when its heartbeats stop and names the GPUs whose lease ran out; and
// it names the GPUs to read again: those a stop went unanswered on, and
// those of a job past its end. What a death means for the jobs that ran
// there is the core's (declareDead, loseGPU); reading a GPU is the
// calls' (describe, handed in).
type liveness struct {
	// lease is the GPUs' lease (none when not positive); callTimeout how
	// often a GPU that owes a stop's answer is asked again.
	lease, callTimeout time.Duration
	// virtual: on a virtual clock a missed ping is the machine's load,
	// not the cluster's, and a simulation's nodes are there from the
	// start (no node events).
	virtual  bool
	view     *view
	nodes    *nodeRegistry
	out      *outbox
	log      *zap.Logger
	subjects events.Subjects
}

// heartbeat takes what a node's heartbeat says of it and of its GPUs
// (hb, its node already checked against its subject) into the view: the
// GPUs it may not speak for are dropped from hb, the node is announced
// when it appears, and a GPU it names alive or not alive at the
// incarnation the view knows is marked so (on a virtual clock, only
// back to alive). ask are the GPUs it names alive that the view has not
// read at that incarnation; changed says the view changed.
func (l *liveness) heartbeat(hb *events.NodeHeartbeat, wall, now time.Time) (ask []string, changed bool) {
	hb.GPUs = slices.DeleteFunc(hb.GPUs, func(g events.HeartbeatGPU) bool {
		if !events.SpeaksFor(hb.Node, g.GPU) {
			return true // another node's by its id: not this node's to announce
		}
		st, ok := l.view.gpus[g.GPU]
		return ok && st.status.Node != hb.Node
	})
	hb.GPUs = l.withinBound(hb.Node, hb.GPUs, now)
	heard := l.nodes.heardFrom(hb.Node)
	n := l.view.node(hb.Node)
	if !heard || !n.Alive {
		l.nodeSeen(*hb, heard, now)
	}
	l.nodes.beat(hb.Node, wall, hb.BatchCtl)
	cpu := model.CoresToMilli(hb.CPUTotal)
	if !n.Alive || n.CPUMilli != cpu || n.MemTotal != hb.MemoryTotal {
		n.Alive, n.CPUMilli, n.MemTotal = true, cpu, hb.MemoryTotal
		l.view.cluster.TouchNode(n)
		changed = true
	}
	for _, g := range hb.GPUs {
		l.nodes.named(hb.Node, g.GPU, g.Incarnation)
		st, ok := l.view.gpus[g.GPU]
		if !ok || g.Incarnation > st.status.Incarnation {
			// Unknown, or restarted without this scheduler hearing its up:
			// asked once it answers its node, without waiting (calls.go).
			if g.Alive {
				ask = append(ask, g.GPU)
			}
			continue
		}
		if g.Alive && (g.Incarnation != st.status.Incarnation || g.Incarnation <= st.dead) {
			continue // a dead incarnation is not revived by its node's word
		}
		// On a virtual clock a missed ping measures the machine's load, not
		// the simulated cluster, so it must not change a decision: a run
		// would then depend on how loaded the machine was. Not alive here is
		// "suspect": nothing new goes there; only the lease declares death.
		if st.g.Alive != g.Alive && (g.Alive || !l.virtual) {
			st.g.Alive = g.Alive
			l.view.cluster.Touch(st.g)
			changed = true
		}
	}
	return ask, changed
}

// grant answers a node heartbeat (m): every GPU reported alive at the
// incarnation the scheduler knows and has not declared dead gets its
// lease renewed, on both sides.
func (l *liveness) grant(m *Msg, hb events.NodeHeartbeat, wall, now time.Time) {
	grant := events.LeaseGrant{Node: hb.Node, Beat: hb.Beat, LeaseMS: l.lease.Milliseconds()}
	for _, g := range hb.GPUs {
		gs, ok := l.view.gpus[g.GPU]
		if !ok || !g.Alive || g.Incarnation != gs.status.Incarnation || g.Incarnation <= gs.dead || gs.status.Node != hb.Node {
			continue
		}
		gs.renewLease(wall, now, l.lease)
		grant.GPUs = append(grant.GPUs, events.HeartbeatGPU{GPU: g.GPU, Incarnation: g.Incarnation, Alive: true})
	}
	if m.Reply != "" && l.lease > 0 {
		l.out.reply(m, grant)
	}
}

// renewLease counts a GPU's lease from wall (renewed at simulated now);
// no lease is kept when lease is not positive.
func (gs *gpuState) renewLease(wall, now time.Time, lease time.Duration) {
	if lease > 0 {
		gs.leaseUntil, gs.renewedAt = wall.Add(lease), now
	}
}

// deadline is when the next lease runs out (a GPU's, or a node's
// heartbeats'), zero without one: a virtual clock's shell steps
// TimerLease then (a scaled clock's checks on a wall ticker).
func (l *liveness) deadline() time.Time {
	if l.lease <= 0 {
		return time.Time{}
	}
	var next time.Time
	earlier := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, g := range l.view.cluster.GPUs {
		if gs := l.view.gpus[g.ID]; gs.status.Incarnation > gs.dead {
			earlier(gs.leaseUntil)
		}
	}
	earlier(l.nodes.nextLapse(l.lease, l.view.nodeAlive))
	return next
}

// runOut says why a GPU's lease has run out by wall (false: it has not,
// or it keeps none, or its incarnation is dead already).
func (l *liveness) runOut(gs *gpuState, wall time.Time) (string, bool) {
	if gs.leaseUntil.IsZero() || wall.Before(gs.leaseUntil) || gs.status.Incarnation <= gs.dead {
		return "", false
	}
	late := wall.Sub(gs.leaseUntil.Add(-l.lease)).Round(time.Millisecond)
	return "lease expired: no heartbeat renewed it for " + late.String() + " (lease " + l.lease.String() + ")", true
}

// bury marks a GPU's incarnation inc (and any before it) dead: it keeps
// no lease, and nothing it says from now on is believed. The GPU comes
// back as a later incarnation.
func (l *liveness) bury(gs *gpuState, inc int) {
	gs.dead = max(gs.dead, inc)
	gs.leaseUntil = time.Time{}
	gs.g.Alive = false
	l.view.cluster.Touch(gs.g)
}

// lapseNodes declares down every node whose heartbeats stopped for a
// lease (its GPUs' leases, renewed only by those heartbeats, run out
// too); it says whether any was.
func (l *liveness) lapseNodes(wall, now time.Time) bool {
	lapsed := false
	for _, id := range l.nodes.lapsed(wall, l.lease, l.view.nodeAlive) {
		n, at := l.view.nodes[id], l.nodes.lastBeat(id)
		n.Alive = false
		l.view.cluster.TouchNode(n)
		lapsed = true
		reason := "no heartbeat for " + wall.Sub(at).Round(time.Millisecond).String() + " (lease " + l.lease.String() + ")"
		l.log.Warn("node lost", zap.String("node", id), zap.String("reason", reason))
		l.emitNode(events.NodeDown, events.NodeLifecycle{Node: id, Change: events.ChangeLeaseExpired, Reason: reason}, now)
	}
	return lapsed
}

// nodeSeen announces a node the scheduler sees appear: new to it, or
// heard again after it was declared down.
func (l *liveness) nodeSeen(hb events.NodeHeartbeat, known bool, now time.Time) {
	change := events.NodeJoined
	if known {
		change = events.ChangeRejoined
	}
	n := 1 // a node coming back is always worth a line
	if !known {
		n = l.nodes.count() + 1
	}
	logJoin(l.log, n, "node "+change, zap.String("node", hb.Node), zap.Int("gpus", len(hb.GPUs)))
	l.emitNode(events.NodeUp, events.NodeLifecycle{Node: hb.Node, Change: change, GPUs: len(hb.GPUs)}, now)
}

// emitNode publishes a node's lifecycle event (none on a virtual clock).
func (l *liveness) emitNode(typ string, data events.NodeLifecycle, now time.Time) {
	if l.virtual {
		return // a simulation's nodes are all there from the start
	}
	l.out.emit(l.subjects.NodeEvent(data.Node, typ), events.Type("node", typ), data.Node, now, data)
}

// withinBound keeps the GPUs of a heartbeat within its node's bound
// (nodeRegistry.withinBound), saying a refusal that is news.
func (l *liveness) withinBound(node string, gpus []events.HeartbeatGPU, now time.Time) []events.HeartbeatGPU {
	kept, refused := l.nodes.withinBound(node, gpus, l.view.knows, l.view.knownOn(node))
	l.sayRefused(node, refused, now)
	return kept
}

// mayJoin says whether gpu may join the view as node's
// (nodeRegistry.mayJoin), saying a refusal that is news.
func (l *liveness) mayJoin(node, gpu string, now time.Time) bool {
	ok, refused := l.nodes.mayJoin(node, gpu, l.view.knownOn(node))
	l.sayRefused(node, refused, now)
	return ok
}

// sayRefused says, once a node goes past its bound, that refused of its
// GPUs past it are refused (nothing when refused is 0).
func (l *liveness) sayRefused(node string, refused int, now time.Time) {
	if refused == 0 {
		return
	}
	bound := l.nodes.bound(node)
	l.log.Warn("a node names more GPUs than it may have: the ones past its bound are refused", zap.String("node", node),
		zap.Int("bound", bound), zap.Int("refused", refused))
	l.out.emit(l.subjects.SecurityEvent(events.GPUsRefused), events.Type("security", events.GPUsRefused), node, now,
		events.RefusedGPUs{Node: node, Bound: bound, Refused: refused})
}

// askAwaiting reads (describe) the GPUs a job awaits (a stop sent there
// went unanswered), a call timeout after the stop timed out and every
// call timeout after that while the job still waits: the answer either
// shows the job gone (confirmed stopped) or still running (released
// again, as a stray; reconcile). Waiting for the GPU to speak of its own
// was not enough: a GPU that released the job and said so before the
// stop timed out, and then had nothing more to say, would be waited for
// for ever (under a drop fault: the GPU's status saying it released the
// job comes first, then the stop's answer is lost and the stop times
// out). Jobs in submission order, their GPUs by id: the describes go out
// in one order in every run.
func (l *liveness) askAwaiting(waits *stopWaits, wall time.Time, describe func(node, gpu string)) {
	for _, j := range waits.due(wall, l.callTimeout) {
		for _, g := range gpusOf(j) {
			// A suspect GPU is asked too (on a virtual clock its answer
			// is what trusts it again: calls.go). One declared dead has
			// confirmed the stop already (stopWaits.confirmOn).
			if gs, ok := l.view.gpus[g]; ok && gs.status.Incarnation > gs.dead {
				describe(gs.status.Node, g)
			}
		}
	}
}

// overdueRecheck is how often (wall time) the GPUs of a job past its end
// are read again while it stays unaccounted for.
const overdueRecheck = time.Second

// overdueGrace is how long past its estimated end a job on a virtual
// clock runs before its GPUs are read (askOverdue; the aging ticker does
// it on a scaled clock), and how often again after that: simulated time,
// long next to the float error of an estimate, short next to a job.
const overdueGrace = time.Minute

// overdueBy is when a running GPU job becomes overdue on a virtual clock:
// a grace after its estimate reaches its work (false: it never does, or
// it is not timed by its progress).
func (j *job) overdueBy() (time.Time, bool) {
	if j.cpuEnds != nil || len(j.gpus) == 0 || j.spec.Training != nil {
		return time.Time{}, false
	}
	// A gang ends with its slowest share. The last report heard counts
	// too, even a finished share's: the estimate must not depend on
	// which share's report came last.
	// (Allocation-free, as estimate is: NextWake asks it of every running
	// job after every step on a virtual clock.)
	last, ok := j.lastMark().reaches(j.work())
	for _, g := range j.gpus {
		m, has := j.shareMarks[g]
		if !has || slices.Contains(j.shardsDone, g) {
			continue // no report, or its share completed
		}
		at, ends := m.reaches(j.work())
		if !ends {
			return time.Time{}, false
		}
		if at.After(last) {
			last = at
		}
	}
	return last.Add(overdueGrace), ok || len(j.shareMarks) > 0
}

// askOverdue reads in full (describe) the GPUs of each running job that
// should have ended by now: a completion whose event was lost (a drop, a
// partition's last words) is then learned by reconciling, which nothing
// else would bring about, as a GPU with nothing left to do publishes
// nothing more.
func (l *liveness) askOverdue(running *runningJobs, wall, now time.Time, describe func(node, gpu string)) {
	for _, j := range slices.Clone(running.list) {
		// A training job's end is its model's, not its duration's.
		if j.cpuEnds != nil || len(j.gpus) == 0 || j.spec.Training != nil || j.estimate(now) < j.work() || wall.Before(j.overdueAt) {
			continue
		}
		j.overdueAt = wall.Add(overdueRecheck)
		if l.virtual {
			j.overdueAt = wall.Add(overdueGrace)
		}
		for _, g := range slices.Clone(j.gpus) {
			// On a virtual clock a suspect GPU is read too: its answer
			// is what trusts it again (calls.go).
			if gs, ok := l.view.gpus[g]; ok && (gs.g.Alive || l.virtual) && gs.status.Incarnation > gs.dead {
				describe(gs.status.Node, g)
			}
		}
	}
}

// loudJoins is how many GPU (and node) joins are logged at info level; the
// rest go to debug, so a 100,000-GPU cluster does not print 112,500
// lines as it starts (the cluster logs when it is ready, with its size).
const loudJoins = 64

// logJoin logs the n-th join of a kind (msg): at info level up to
// loudJoins, then at debug level (a line saying so once, at the switch).
func logJoin(log *zap.Logger, n int, msg string, fields ...zap.Field) {
	switch {
	case n <= loudJoins:
		log.Info(msg, fields...)
	case n == loudJoins+1:
		log.Info("more joins are logged at debug level only", zap.String("kind", msg), zap.Int("after", loudJoins))
		fallthrough
	default:
		log.Debug(msg, fields...)
	}
}
