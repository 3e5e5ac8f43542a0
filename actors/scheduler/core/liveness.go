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

// DefaultLease is how long the scheduler waits without a heartbeat that
// renews a GPU before it declares the GPU dead: three default heartbeat
// periods, so one late heartbeat is not a death.
const DefaultLease = 6 * time.Second

// DefaultVirtualLease is the lease on a virtual clock, in simulated time:
// the wall default at the scaled clock's default speed (6 s × 120 = 12
// simulated minutes, three of node.DefaultVirtualHeartbeat), so a virtual
// run declares a hung or cut-off GPU dead when the live demo would.
const DefaultVirtualLease = DefaultLease * 120

// leaseDeadline is when the next lease runs out (a GPU's, or a node's
// heartbeats'), zero without one: a virtual clock's shell steps
// TimerLease then (a scaled clock's checks on a wall ticker).
func leaseDeadline(v *view, nodes *nodeRegistry, lease time.Duration) time.Time {
	if lease <= 0 {
		return time.Time{}
	}
	var next time.Time
	earlier := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, g := range v.cluster.GPUs {
		if gs := v.gpus[g.ID]; gs.status.Incarnation > gs.dead {
			earlier(gs.leaseUntil)
		}
	}
	earlier(nodes.nextLapse(lease, v.nodeAlive))
	return next
}

// renewLease counts a GPU's lease from wall (renewed at simulated now);
// no lease is kept when lease is not positive.
func (gs *gpuState) renewLease(wall, now time.Time, lease time.Duration) {
	if lease > 0 {
		gs.leaseUntil, gs.renewedAt = wall.Add(lease), now
	}
}

// grantLeases answers a node heartbeat: every GPU reported alive at the
// incarnation the scheduler knows and has not declared dead gets its lease
// renewed, on both sides.
func (s *Core) grantLeases(m *Msg, hb events.NodeHeartbeat) {
	grant := events.LeaseGrant{Node: hb.Node, Beat: hb.Beat, LeaseMS: s.cfg.Lease.Milliseconds()}
	for _, g := range hb.GPUs {
		gs, ok := s.view.gpus[g.GPU]
		if !ok || !g.Alive || g.Incarnation != gs.status.Incarnation || g.Incarnation <= gs.dead || gs.status.Node != hb.Node {
			continue
		}
		gs.renewLease(s.wall, s.now, s.cfg.Lease)
		grant.GPUs = append(grant.GPUs, events.HeartbeatGPU{GPU: g.GPU, Incarnation: g.Incarnation, Alive: true})
	}
	if m.Reply != "" && s.cfg.Lease > 0 {
		s.out.reply(m, grant)
	}
}

// checkLeases declares dead every GPU whose lease has run out, and down
// every node whose heartbeats stopped.
func (s *Core) checkLeases() {
	s.checkNodes()
	now := s.wall
	for _, g := range s.view.cluster.GPUs {
		gs := s.view.gpus[g.ID]
		if gs.leaseUntil.IsZero() || now.Before(gs.leaseUntil) || gs.status.Incarnation <= gs.dead {
			continue
		}
		late := now.Sub(gs.leaseUntil.Add(-s.cfg.Lease)).Round(time.Millisecond)
		s.declareDead(gs, "lease expired: no heartbeat renewed it for "+late.String()+" (lease "+s.cfg.Lease.String()+")")
	}
}

// checkAwaiting asks the GPUs a job awaits (a stop sent there went
// unanswered) whether they still run it, a call timeout after the stop
// timed out and every call timeout after that while the job still waits:
// a describe, whose answer either shows the job gone (confirmed stopped)
// or still running (released again, as a stray; reconcile). Waiting for
// the GPU to speak of its own was not enough: a GPU that released the job
// and said so before the stop timed out, and then had nothing more to
// say, would be waited for for ever (under a drop fault: the GPU's
// status saying it released the job comes first, then the stop's answer
// is lost and the stop times out). Jobs in submission order, their GPUs by id: the
// describes go out in one order in every run.
func (s *Core) checkAwaiting() {
	for _, j := range s.unconfirmed.due(s.wall, s.cfg.CallTimeout) {
		for _, g := range gpusOf(j) {
			// A suspect GPU is asked too (on a virtual clock its answer
			// is what trusts it again: calls.go). One declared dead has
			// confirmed the stop already (confirmStopped).
			if gs, ok := s.view.gpus[g]; ok && gs.status.Incarnation > gs.dead {
				s.describe(gs.status.Node, g)
			}
		}
	}
}

// overdueRecheck is how often (wall time) the GPUs of a job past its end
// are read again while it stays unaccounted for.
const overdueRecheck = time.Second

// overdueGrace is how long past its estimated end a job on a virtual
// clock runs before its GPUs are read (checkOverdue; the aging ticker does
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

// checkOverdue reads in full the GPUs of each running job that should have
// ended by now: a completion whose event was lost (a drop, a partition's
// last words) is then learned by reconciling, which nothing else would
// bring about, as a GPU with nothing left to do publishes nothing more.
func (s *Core) checkOverdue() {
	now, wall := s.now, s.wall
	for _, j := range slices.Clone(s.running.list) {
		// A training job's end is its model's, not its duration's.
		if j.cpuEnds != nil || len(j.gpus) == 0 || j.spec.Training != nil || j.estimate(now) < j.work() || wall.Before(j.overdueAt) {
			continue
		}
		j.overdueAt = wall.Add(overdueRecheck)
		if s.virtual {
			j.overdueAt = wall.Add(overdueGrace)
		}
		for _, g := range slices.Clone(j.gpus) {
			// On a virtual clock a suspect GPU is read too: its answer
			// is what trusts it again (calls.go).
			if gs, ok := s.view.gpus[g]; ok && (gs.g.Alive || s.virtual) && gs.status.Incarnation > gs.dead {
				s.describe(gs.status.Node, g)
			}
		}
	}
}

// checkNodes declares down every node whose heartbeats stopped for a
// lease (its GPUs' leases, renewed only by those heartbeats, run out too).
func (s *Core) checkNodes() {
	now := s.wall
	for _, id := range s.nodes.lapsed(now, s.cfg.Lease, s.view.nodeAlive) {
		n, at := s.view.nodes[id], s.nodes.lastBeat(id)
		n.Alive = false
		s.view.cluster.TouchNode(n)
		s.dirty = true
		reason := "no heartbeat for " + now.Sub(at).Round(time.Millisecond).String() + " (lease " + s.cfg.Lease.String() + ")"
		s.log.Warn("node lost", zap.String("node", id), zap.String("reason", reason))
		s.emitNode(events.NodeDown, events.NodeLifecycle{Node: id, Change: events.ChangeLeaseExpired, Reason: reason})
	}
}

// nodeSeen announces a node the scheduler sees appear: new to it, or
// heard again after it was declared down.
func (s *Core) nodeSeen(hb events.NodeHeartbeat, known bool) {
	change := events.NodeJoined
	if known {
		change = events.ChangeRejoined
	}
	n := 1 // a node coming back is always worth a line
	if !known {
		n = s.nodes.count() + 1
	}
	logJoin(s.log, n, "node "+change, zap.String("node", hb.Node), zap.Int("gpus", len(hb.GPUs)))
	s.emitNode(events.NodeUp, events.NodeLifecycle{Node: hb.Node, Change: change, GPUs: len(hb.GPUs)})
}

// loudJoins is how many GPU (and node) joins are logged at info level; the
// rest go to debug, so a 100,000-GPU cluster does not print 112,500
// lines as it starts (the cluster logs when it is ready, with its size).
const loudJoins = 64

func (s *Core) emitNode(typ string, data events.NodeLifecycle) {
	if s.virtual {
		return // a simulation's nodes are all there from the start
	}
	s.out.emit(s.cfg.Subjects.NodeEvent(data.Node, typ), events.Type("node", typ), data.Node, s.now, data)
}

// declareDead is the scheduler's verdict on a GPU it stopped hearing from:
// it publishes gpu.down for the GPU's incarnation (which, if alive but cut
// off, has already stopped its own jobs: its fence comes before the lease
// ends), re-queues the jobs it ran, and ignores anything that incarnation
// says from now on. The GPU comes back as its next incarnation.
func (s *Core) declareDead(gs *gpuState, reason string) {
	inc := gs.status.Incarnation
	gs.dead = inc
	gs.leaseUntil = time.Time{}
	g := gs.g
	g.Alive = false
	s.view.cluster.Touch(g)
	st := gs.status
	st.Change, st.JobID, st.Reason = events.ChangeLeaseExpired, "", reason
	st.Jobs = s.running.jobsOn(g.ID, inc, st.Jobs, s.now)
	// Its jobs ran at least until it was last heard (its lease's last
	// renewal): what its last status said may be hours older (a GPU
	// whose jobs do not change says nothing), and a job would lose the
	// checkpoints it reached since.
	for i := range st.Jobs {
		if j, ok := s.jobs[st.Jobs[i].JobID]; ok && !gs.renewedAt.IsZero() {
			st.Jobs[i].ProgressS = max(st.Jobs[i].ProgressS, j.estimate(gs.renewedAt)) // renewedAt is never after now
		}
	}
	s.stats.deaths++
	s.log.Warn("GPU declared dead", zap.String("gpu", g.ID), zap.String("node", g.Node), zap.Int("incarnation", inc),
		zap.String("reason", reason), zap.Int("jobs", len(st.Jobs)))
	s.out.emit(s.cfg.Subjects.GPUEvent(g.Node, g.ID, events.GPUDown), events.Type("gpu", events.GPUDown), g.ID, s.now, st)
	s.loseGPU(gs, st.Jobs, false, "GPU "+g.ID+" on "+g.Node+" declared dead ("+reason+")")
}

// loseGPU re-queues the jobs that ran on a GPU now gone, from their last
// checkpoint, and empties the GPU in the view; jobs waiting for that GPU
// to confirm a stop no longer wait. rejoined says the GPU came back as a
// new incarnation (requeueRejoined), not dead (requeueLost).
func (s *Core) loseGPU(gs *gpuState, lost []events.GPUJob, rejoined bool, reason string) {
	for _, sj := range lost {
		j, ok := s.jobs[sj.JobID]
		if !ok || j.state != stateRunning || !slices.Contains(j.gpus, gs.g.ID) {
			continue
		}
		s.stats.lostJobs++
		if rejoined {
			s.requeueRejoined(j, sj.ProgressS, reason)
			continue
		}
		s.requeueLost(j, sj.ProgressS, reason)
	}
	s.confirmStopped(gs.g.ID, func(int) bool { return true })
	gs.g.Allocs = gs.g.Allocs[:0]
	gs.g.Util = 0
	s.view.rebuildShares(gs.g, s.jobs)
	s.dirty = true
}

// onCtl answers <p>.sched.ctl: kill crashes the scheduler (chaos);
// store-down and store-up say whether the job journal's store can take
// writes (the control plane's store watch).
func (s *Core) onCtl(m *Msg) bool {
	var c events.Control
	if !s.out.decodeRequest(m, &c) {
		return false
	}
	switch c.Op {
	case events.OpStoreDown:
		if s.writes.down == "" {
			s.log.Warn("the job journal's store cannot take writes: submissions are refused until it can", zap.String("reason", c.Reason))
		}
		s.writes.down = cmp.Or(c.Reason, "the store cannot take writes")
		return false
	case events.OpStoreUp:
		if s.writes.down != "" {
			s.log.Info("the job journal's store takes writes again")
		}
		s.writes.down = ""
		return false
	case events.OpKill:
	default:
		s.out.replyError(m, "op", "unknown operation "+strconv.Quote(c.Op)+" (the scheduler's control knows kill, store-down and store-up)")
		return false
	}
	reason := c.Reason
	if reason == "" {
		reason = "killed"
	}
	s.killed = reason
	s.out.reply(m, events.SchedLifecycle{Incarnation: s.cfg.Incarnation, Reason: reason,
		Queued: queued(s.queue, s.training, s.jobs), Running: s.running.len(), Policy: s.plugins.Placement.Name(), Queue: s.plugins.QueueSort.Name(), Durable: s.cfg.Journaled})
	return true
}

// Remains says what a dead scheduler held: its supervisor reports it in
// the down event (the queue is lost unless the journal keeps it).
func (s *Core) Remains() events.SchedLifecycle {
	s.metrics() // brings the energy up to now
	t := s.Totals()
	r := events.SchedLifecycle{Incarnation: s.cfg.Incarnation, Reason: s.killed, Queued: queued(s.queue, s.training, s.jobs),
		Running: s.running.len(), Policy: s.plugins.Placement.Name(), Queue: s.plugins.QueueSort.Name(), Durable: s.cfg.Journaled, Totals: &t}
	for _, j := range s.running.list {
		rj := events.RunningJob{JobID: j.id, Placement: j.placement}
		if j.cpuEnds != nil && j.node != "" {
			rj.CPUOnly = &events.CPUOnlyJob{Spec: j.spec, Seq: j.seq, Submitted: j.submitted, Node: j.node, Ends: *j.cpuEnds}
			if j.started != nil {
				rj.CPUOnly.Started = *j.started
			}
		}
		r.RunningJobs = append(r.RunningJobs, rj)
	}
	for id, p := range s.restart.inherited {
		if _, known := s.jobs[id]; !known {
			r.RunningJobs = append(r.RunningJobs, events.RunningJob{JobID: id, Placement: p})
		}
	}
	for _, st := range s.stops {
		// A victim whose stop is unanswered is still on its GPU as far as
		// anyone knows (a hung GPU never took the stop): the successor
		// accounts for it like a running job — re-learned where it still
		// runs, re-queued where its GPU stopped or lost it. A release
		// (a cancel) is not: the job is over.
		if st.op == events.OpPreempt && st.job.placement != "" {
			r.RunningJobs = append(r.RunningJobs, events.RunningJob{JobID: st.job.id, Placement: st.job.placement})
		}
	}
	slices.SortFunc(r.RunningJobs, func(a, b events.RunningJob) int { return strings.Compare(a.JobID, b.JobID) })
	if !r.Durable {
		carried := map[string]bool{}
		for _, rj := range r.RunningJobs {
			carried[rj.JobID] = true
		}
		for id, j := range s.jobs {
			if !j.terminal() && !carried[id] {
				r.LostJobs = append(r.LostJobs, id)
			}
		}
		slices.Sort(r.LostJobs)
	}
	return r
}

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
		s.confirmStopped(st.GPU, func(inc int) bool { return st.Incarnation > inc })
		for _, j := range s.unconfirmed.on(st.GPU) {
			// The GPU's current word, whatever incarnation the stop was
			// sent to (a restarted process numbers them from 1 again).
			if _, still := hasJob(st.Jobs, j.id); !still {
				s.confirmStoppedJob(j, st.GPU)
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
	s.transition(j, events.JobRejected, fe.Message)
	return true
}

// await records that gpu (at incarnation inc) may still run j: a stop
// sent to it went unanswered.
func (s *Core) await(j *job, gpu string, inc int) {
	s.unconfirmed.add(j, gpu, inc, s.wall.Add(s.cfg.CallTimeout))
	s.writes.touch(j)
}

// confirmStopped clears gpu from the jobs waiting on it whose recorded
// incarnation passes done (the GPU died, or came back as a later one), in
// submission order.
func (s *Core) confirmStopped(gpu string, done func(inc int) bool) {
	for _, j := range s.unconfirmed.on(gpu) {
		if done(j.awaiting[gpu]) {
			s.confirmStoppedJob(j, gpu)
		}
	}
}

func (s *Core) confirmStoppedJob(j *job, gpu string) {
	s.unconfirmed.confirm(j, gpu)
	s.writes.touch(j)
	s.dirty = true
}

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
