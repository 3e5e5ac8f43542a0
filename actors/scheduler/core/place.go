package core

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	gojson "github.com/goccy/go-json"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
)

// placer places jobs: the pass over the queue in order (holds for the
// jobs past the starvation age, backfill behind them, each job's pending
// reason), a submission tried at once, each attempt over its candidates,
// the reservations of each placement in flight (negotiate.go: resolved in
// the order decided), victims for a job that outranks running ones, and
// the Round in force (round.go).
type placer struct {
	// pass is the pass under way (nil: none); inflight the placements
	// whose reservations are in flight, in the order they were decided;
	// waiting the attempts that wait for them to resolve (to choose
	// victims); placements counts this scheduler's placements, naming
	// each.
	pass       *pass
	inflight   []*negotiation
	waiting    []*attempt
	placements uint64
	// settleDue: on a virtual clock, settled waits for the next TimerPass
	// (settling is set while that runs it).
	settleDue, settling bool

	cfg      *Config
	clock    *instant
	dirty    *bool // a pass is due: the core's (Dirty)
	jobs     map[string]*job
	view     *view
	nodes    *nodeRegistry
	queue    *waitQueue
	running  *runningJobs
	plugins  *policy.Profile
	calls    *callTracker
	stops    *stops
	life     *lifecycle
	stats    *totals
	training *training
	classes  *jobClasses
	recovery *recovery
	owed     *restart
	out      *outbox
	log      *zap.Logger
	// What a placement asks of the rest of the core: the answer to a
	// submission not placed at once; a refusing GPU's status folded in.
	notPlacedAtOnce func(j *job, m *Msg)
	refusalStatus   func(node, gpu string, r events.ControlReply)
}

// idle says no pass, placement, waiting attempt or stop is under way.
func (pl *placer) idle() bool {
	return pl.pass == nil && len(pl.inflight) == 0 && len(pl.waiting) == 0 && !pl.stops.pending()
}

// settleWaits says a pass or an attempt waits for the instant to settle
// (virtual clock) with nothing in flight: the next TimerPass takes it on.
func (pl *placer) settleWaits() bool {
	return pl.settleDue && len(pl.inflight) == 0 && !pl.stops.pending()
}

// negotiating says some placement's reservations are in flight.
func (pl *placer) negotiating() bool { return len(pl.inflight) > 0 }

// holdAgain puts back in the view, after a GPU's layout was read from its
// status, the reservations in flight there that the status does not show
// yet.
func (pl *placer) holdAgain(gs *gpuState) { pl.view.holdAgain(gs, pl.inflight, pl.jobs) }

// settleNow runs what waited for the instant to settle (TimerPass).
func (pl *placer) settleNow() {
	if pl.settleDue {
		pl.settling = true
		pl.settled()
		pl.settling = false
	}
}

type ctlCall struct {
	subject string
	ctl     events.Control
	gpu     string // empty for the node actor
}

// ask sends c's control as the call cl, its answer awaited (calls).
func (o *outbox) ask(calls *callTracker, c ctlCall, cl *call) {
	number, reply := calls.open(cl)
	c.ctl.Call = number
	b, err := gojson.Marshal(c.ctl)
	if err != nil {
		o.log.Error("control not encoded", zap.String("subject", c.subject), zap.Error(err))
	}
	o.send(c.subject, reply, b)
}

// ctlNode is the node whose subject reaches GPU id of placement p: the
// placement's node, or, for a gang across nodes (no node named), the
// GPU's own.
func ctlNode(j *job, p policy.Placement, id string, v *view, nodes *nodeRegistry) string {
	if p.Node != "" {
		return p.Node
	}
	return gpuNode(j, id, v, nodes)
}

// gangPace is the gang's iteration-time multiplier on gpus for a job with a
// perf_class (0 without one): the slowest GPU's multiplier for the class
// (1 where a GPU has none) × the locality penalty when the GPUs span
// nodes (model.GangSlowdown).
func gangPace(j *job, gpus []string, v *view, registry *nodeRegistry, locality float64) float64 {
	if j.spec.PerfClass == "" || len(gpus) == 0 {
		return 0
	}
	mults := make([]float64, len(gpus))
	nodes := make([]string, len(gpus))
	for i, id := range gpus {
		mults[i], nodes[i] = 1, gpuNode(j, id, v, registry)
		if gs, ok := v.gpus[id]; ok {
			if m, ok := gs.g.Variability[j.spec.PerfClass]; ok {
				mults[i] = m
			}
		}
	}
	penalty := max(locality, 1)
	pm, loc := model.GangSlowdown(mults, nodes, penalty)
	return pm * loc
}

// maxCandidatesInExplain bounds the candidates a decision event lists.
const maxCandidatesInExplain = policy.MaxCandidates

func candidates(ps []policy.Placement, ranked []rankFigures) []events.Candidate {
	out := make([]events.Candidate, 0, len(ps))
	for i, p := range ps[:min(len(ps), maxCandidatesInExplain)] {
		c := events.Candidate{Node: p.Node, GPUs: p.GPUs, Score: p.Score}
		if i < len(ranked) && ranked[i].known {
			r := ranked[i]
			c.Ranked = fmt.Sprintf("util %.0f%%, %s of %s used", r.util, model.Bytes(r.used).GBString(), model.Bytes(r.total).GBString())
		}
		out = append(out, c)
	}
	return out
}

// rankFigures are what the GPU rankers order a candidate by: its first
// GPU's utilisation, VRAM used and size, as the policy saw them (known is
// false for a CPU-only job's node). Kept as numbers on the placement path,
// written out only for the decision's event.
type rankFigures struct {
	known       bool
	util        float64
	used, total int64
}

// unpinnedChoice is where the policy alone would put a pinned request in
// the view now: its best placement's GPUs (or node), "" when none fits.
func unpinnedChoice(req *policy.Request, plugins *policy.Profile, v *view) string {
	free := *req
	free.PinGPU, free.PinNode = "", ""
	alts := plugins.Place(v.sorted(), &free)
	switch {
	case len(alts) == 0:
		return ""
	case len(alts[0].GPUs) > 0:
		return strings.Join(alts[0].GPUs, ",")
	}
	return alts[0].Node
}

// pass is a scheduling pass under way: the queue as it was when the pass
// began, and how far the pass has come.
type pass struct {
	jobs []*job
	next int
	// held is each tenant's GPUs in running (and in-flight) jobs, for
	// admission (nil without admission).
	held usage
	// unplaced is what the pass learnt of the request shapes that fit
	// nowhere while nothing but holds has changed the view (no placement,
	// no preemption, no input): each shape is placed once, not once per
	// job of a long queue of like jobs. A hold only takes GPUs away, so a
	// shape that fit nowhere still fits nowhere and still finds nothing to
	// hold; only its reason (which counts held GPUs) is asked again, once
	// per holdings. Nil outside continuePass's loop (an input may have
	// changed the view since).
	unplaced map[shape]*unplaced
	// holdings counts the holds made since the pass learnt anything.
	holdings int
	// lostWorkFresh says the shares' lost work was refreshed since the
	// view last changed (refreshLostWork gives the same at the same instant;
	// holds do not change it).
	lostWorkFresh bool
}

// shape is what a placement decision reads of a request, all but its job:
// two requests of one shape fit, or fail to fit, the same view alike.
type shape struct {
	priority        model.Priority
	gpus, milli     int
	vram, cpuMilli  int64
	memory          int64
	util            float64
	models          string
	pinGPU, pinNode string
}

func shapeOf(r *policy.Request) shape {
	return shape{priority: r.Priority, gpus: r.GPUs, milli: r.Milli, vram: r.VRAM, cpuMilli: r.CPUMilli, memory: r.Memory,
		util: r.Util, models: strings.Join(r.Models, "\x00"), pinGPU: r.PinGPU, pinNode: r.PinNode}
}

// unplaced is a shape's failure in the current view: why it fits nowhere
// (policy.Why, asked at holdings) and, once asked, that policy.Hold found
// nothing to hold.
type unplaced struct {
	why         string
	holdings    int
	nothingHeld bool
}

// refreshLostWork is the view's refreshLostWork, done once while the
// pass's view stands (inside continuePass's loop; every time outside it,
// where p is nil).
func (p *pass) refreshLostWork(v *view, jobs map[string]*job, now time.Time) {
	if p.unplacedShapes() != nil && p.lostWorkFresh {
		return
	}
	v.refreshLostWork(jobs, now)
	if p.unplacedShapes() != nil {
		p.lostWorkFresh = true
	}
}

// holdingsNow is the pass's count of holds (0 without a pass).
func (p *pass) holdingsNow() int {
	if p == nil {
		return 0
	}
	return p.holdings
}

// unplacedShapes is the pass's memory of unplaceable shapes, or nil when
// no pass is in its loop.
func (p *pass) unplacedShapes() map[shape]*unplaced {
	if p == nil {
		return nil
	}
	return p.unplaced
}

// viewChanged forgets what the pass learnt of the view.
func (p *pass) viewChanged() {
	if p != nil && p.unplaced != nil {
		clear(p.unplaced)
		p.holdings, p.lostWorkFresh = 0, false
	}
}

// controls are the controls op (reserve, commit, abort) sends for j's
// placement p: one to the node actor (CPU and memory) unless the placement
// names no node, one to each GPU.
func (pl *placer) controls(j *job, p policy.Placement, op string) []ctlCall {
	if j.spec.Training != nil {
		return pl.training.controls(j, p, op, pl.view, pl.nodes, pl.cfg.ReservationTTL, pl.cfg.Subjects)
	}
	sj := pl.cfg.Subjects
	calls := make([]ctlCall, 0, len(p.GPUs)+1)
	nodeCtl := events.Control{Op: op, JobID: j.id}
	ttl := pl.cfg.ReservationTTL.Milliseconds()
	if op == events.OpReserve {
		nodeCtl.CPU, nodeCtl.Memory, nodeCtl.TTLMillis = j.spec.CPU, int64(j.spec.Memory), ttl
	}
	// A gang across nodes (replayed rounds name no node) holds no CPU or
	// memory of its nodes: its GPUs only.
	if p.Node != "" {
		calls = append(calls, ctlCall{subject: sj.NodeCtl(p.Node), ctl: nodeCtl})
	}
	req := pl.view.request(j)
	pace := 0.0
	if op == events.OpReserve {
		pace = gangPace(j, p.GPUs, pl.view, pl.nodes, pl.cfg.LocalityPenalty) // the gang's, the same on each of its GPUs
	}
	for _, id := range p.GPUs {
		gpuCtl := events.Control{Op: op, JobID: j.id}
		if op == events.OpReserve {
			// VRAM and share are per GPU: a trace job's share of VRAM
			// depends on the model it lands on.
			g := pl.view.gpus[id].g
			gpuCtl.TTLMillis = ttl
			gpuCtl.Job = &events.Assignment{Name: j.spec.Name, Priority: j.spec.Priority, VRAM: req.VRAMOn(g), Milli: req.MilliOn(g),
				Util: j.spec.Util, WorkS: j.work(), ProgressS: j.progress, CheckpointS: j.spec.Checkpoint.Seconds(),
				Spec: &j.spec, Submitted: j.submitted, Seq: j.seq, Placement: j.placement, Pace: pace}
		}
		calls = append(calls, ctlCall{subject: sj.GPUCtl(ctlNode(j, p, id, pl.view, pl.nodes), id), ctl: gpuCtl, gpu: id})
	}
	return calls
}

// placed records a placement committed: the job runs on p's GPUs from now,
// its decision is published, and it is placed and started.
func (pl *placer) placed(j *job, p policy.Placement, a *attempt, victims []string) {
	cands, ranked, refusals := a.cands, a.ranked, a.refusals
	now := pl.clock.now
	j.node, j.gpus = p.Node, p.GPUs
	j.shardsLeft, j.shardsDone, j.shareMarks = len(p.GPUs), nil, nil
	j.relearned()
	j.lastProgress, j.lastRate, j.lastAt = j.progress, 0, now
	if len(p.GPUs) == 0 {
		// A CPU-only job runs at reference speed and ends by the clock.
		j.lastRate = 1
		end := now.Add(time.Duration((j.work() - j.progress) * float64(time.Second)))
		j.cpuEnds = &end
	} else if gs, ok := pl.view.gpus[p.GPUs[0]]; ok {
		j.lastRate = aloneRate(j, gs, pl.cfg.Throughputs)
	}
	if j.firstStarted == nil {
		first := now
		j.firstStarted = &first
	}
	j.stintAt, j.stintFrom, j.stintSpeed = now, j.progress, j.lastRate
	j.victims = victims
	d := &events.Decision{JobID: j.id, Policy: pl.plugins.Placement.Name(), Node: p.Node, GPUs: p.GPUs,
		Candidates: candidates(cands, ranked), Victims: victims, Refusals: refusals}
	// A pinned placement has one candidate: say so, and where the policy
	// alone would have put the job in the view it was placed from.
	d.Pinned, d.Unpinned = a.pinned, a.unpinned
	j.decision = d
	pl.out.emit(pl.cfg.Subjects.SchedEvent(events.SchedDecision), events.Type("sched", events.SchedDecision), j.id, now, d)
	pl.life.transition(j, events.JobPlaced, "", pl.clock.now)
	j.started = &now
	pl.life.transition(j, stateRunning, "", pl.clock.now)
	j.victims = nil
	pl.running.add(j, pl.running.len())
}

// preemptFor stops the victims for preemptor: each keeps its progress up to
// its last checkpoint and goes back to the queue in its original place
// (once its GPUs have answered the stop).
func (pl *placer) preemptFor(preemptor *job, victims []string) {
	for _, id := range victims {
		v, ok := pl.jobs[id]
		if !ok || v.state != stateRunning || v.stopping != nil {
			continue
		}
		pl.stops.stop(v, events.OpPreempt, pl.clock.now, pl.clock.wall, func() {
			v.preemptions++
			pl.stats.preemptions++
			v.preemptor, v.victims = preemptor.id, victims
			pl.log.Info("preempted", zap.String("victim", v.spec.Name), zap.String("job", v.id),
				zap.String("preemptor", preemptor.spec.Name), zap.Float64("kept_progress_s", v.progress))
			// The words name the preemptor; the event's preemptor field
			// carries its id.
			pl.life.transition(v, events.JobPreempted, "preempted by "+preemptor.spec.Name, pl.clock.now)
			v.preemptor, v.victims = "", nil
			pl.life.transition(v, events.JobQueued, "", pl.clock.now)
			pl.life.enqueue(v)
		})
	}
}

// schedule is one pass over the queue in order. A job that fits nowhere
// does not block the jobs behind it (they backfill) until it has waited
// StarvationAge; from then on it holds GPUs (policy.Hold) that nothing
// behind it may take, so it cannot starve. The pass does not wait for the
// placements it starts (negotiate.go); it stops at a job that needs
// victims while placements are in flight, and goes on once they resolve.
func (pl *placer) schedule() {
	if pl.pass != nil || len(pl.inflight) > 0 || len(pl.waiting) > 0 || pl.stops.pending() {
		return // the pass under way, or the next once this one settles
	}
	*pl.dirty = false
	clear(pl.view.held)
	if pl.queue.len() == 0 {
		return // nothing to place (and no view to sort while GPUs join)
	}
	if n := pl.recovery.resumingJobs(); n > 0 {
		// The pass that follows the hold places in queue order, the jobs
		// found lost at their old places among the newcomers.
		reason := fmt.Sprintf("the scheduler restarted and is re-learning the %d jobs its journal says ran; it places nothing until each is found on its GPUs or lost (at most one lease)", n)
		for _, j := range pl.queue.jobs {
			if j.state == events.JobQueued {
				pl.life.pending(j, reason, pl.clock.now)
			}
		}
		return
	}
	pl.view.sorted() // (a sort that renumbers the GPUs clears the holds too)
	p := &pass{jobs: slices.Clone(pl.queue.jobs)}
	if pl.plugins.Admit != nil {
		p.held = pl.running.usage()
	}
	pl.pass = p
	pl.continuePass()
}

// continuePass takes the pass on from where it stopped.
func (pl *placer) continuePass() {
	p := pl.pass
	// What the pass learnt before it stopped may be stale: inputs came since.
	p.unplaced, p.holdings, p.lostWorkFresh = map[shape]*unplaced{}, 0, false
	defer func() { p.unplaced = nil }()
	for ; p.next < len(p.jobs); p.next++ {
		j := p.jobs[p.next]
		if j.state != events.JobQueued || j.negotiating != nil || pl.recovery.rejectUnfit(j) {
			continue
		}
		if j.unchecked && len(pl.view.cluster.GPUs) == 0 {
			reason := "the scheduler restarted and is hearing from the GPUs"
			if len(pl.view.gpus) == 0 {
				reason = "no GPU has joined the cluster yet (GPU nodes join with `cluster node`)"
			}
			pl.life.pending(j, reason, pl.clock.now)
			continue
		}
		if len(j.awaiting) > 0 {
			var gpus []string
			for g := range j.awaiting {
				gpus = append(gpus, g)
			}
			slices.Sort(gpus)
			pl.life.pending(j, "waiting for "+strings.Join(gpus, ",")+" to confirm it stopped the job (a stop went unanswered)", pl.clock.now)
			continue
		}
		if p.held != nil {
			if st := pl.plugins.AdmitPlace(admitJob(&j.spec), p.held.of(j.spec.Tenant)); st != nil {
				pl.life.pending(j, st.Reason, pl.clock.now)
				continue
			}
		}
		switch pl.try(&attempt{job: j, inPass: true, held: p.held}) {
		case tryWait:
			return // goes on once the placements in flight resolve (settled)
		case tryStarted:
			pl.pass.viewChanged() // a placement or a preemption under way
		}
	}
	pl.pass = nil
}

// failed ends an attempt that placed nothing: a submission tried at once
// is answered (queued, or rejected on a cluster that drops such jobs); a
// job of a pass gets its pending reason and, once it has waited the
// starvation age, holds GPUs.
func (pl *placer) failed(a *attempt) {
	j := a.job
	if len(a.refusals) > 0 {
		j.decision = &events.Decision{JobID: j.id, Policy: pl.plugins.Placement.Name(), Refusals: a.refusals, Candidates: candidates(a.cands, a.ranked)}
	}
	if a.submit != nil {
		pl.notPlacedAtOnce(j, a.submit)
		return
	}
	if !a.inPass {
		return
	}
	if !j.inQueue {
		pl.life.enqueue(j) // taken out while it was being placed
	}
	now := pl.clock.now
	req, u := a.req, a.unplaced
	a.req, a.unplaced = nil, nil
	if req == nil {
		req = pl.view.request(j)
	}
	known := pl.pass.unplacedShapes()
	var key shape
	if u == nil && known != nil {
		key = shapeOf(req)
		u = known[key]
	}
	switch {
	case u == nil:
		u = &unplaced{why: policy.Why(pl.view.sorted(), req), holdings: pl.pass.holdingsNow()}
		if known != nil && len(a.refusals) == 0 {
			known[key] = u
		}
	case u.holdings != pl.pass.holdings:
		u.why, u.holdings = policy.Why(pl.view.sorted(), req), pl.pass.holdings
	}
	reason := u.why
	if j.decision != nil && len(j.decision.Refusals) > 0 && j.decision.Node == "" {
		reason = "refused: " + j.decision.Refusals[len(j.decision.Refusals)-1]
	}
	if policy.Aged(j.submitted, now, pl.cfg.StarvationAge) && !u.nothingHeld {
		var names []string
		for _, gi := range policy.Hold(pl.view.sorted(), req, pl.view.held) {
			pl.view.held[gi] = true
			names = append(names, pl.view.cluster.GPUs[gi].ID)
		}
		if len(names) > 0 {
			// Not how long it has waited (job.get and the dashboards tell
			// that): a reason that changed every minute would send a
			// pending event per aged job per pass.
			reason += "; waited past the starvation age (" + pl.cfg.StarvationAge.String() + "), holding " + strings.Join(names, ",")
			if known != nil {
				pl.pass.holdings++
			}
		} else {
			u.nothingHeld = true
		}
	}
	pl.life.pending(j, reason, pl.clock.now)
}
