package core

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/vram"
)

// Pipelined negotiation. A placement's reservations go out with reply
// subjects under the core's inbox and the core moves on: the pass decides
// the next job against a view that holds the reservation tentatively.
// Each answer is an input like any other, matched with the request it
// answers (a late, duplicate or forged one answers nothing in flight and
// is dropped). When every actor a placement touches has answered, the
// placement resolves: all accepted, it is committed and the job runs; any
// refusal or timeout (a call unanswered for CallTimeout) aborts the
// reservations made, undoes the tentative ones, and the job tries its
// next candidate. Placements resolve in the order they were decided, so
// that what the core records (placements, events, the running list) does
// not depend on the order in which the GPUs' answers arrive.
//
// Preemption is decided on a settled view: a job that needs victims while
// placements are in flight waits until they have resolved (the pass stops
// there and resumes then), since a job in flight is neither running (a
// victim) nor gone.

// attempt is one job's attempt to be placed: its candidates tried in turn,
// each ranked again over the view the last refusal corrected, a placement
// once refused not tried again (policy.MaxCandidates at most), then
// preemption.
type attempt struct {
	job   *job
	tried map[string]bool
	n     int
	cands []policy.Placement
	// ranked is what the GPU rankers saw of each candidate (rankedBy).
	ranked   []rankFigures
	refusals []string
	// submit is the submission of a job tried at once: answered when the
	// attempt ends (placed, queued or rejected). inPass says the attempt
	// is a pass's, held its tenant usage for admission.
	submit *Msg
	inPass bool
	held   usage
	// preempting marks the placement made by preemption: not retried.
	preempting bool
	// req and unplaced are the request try made and what the pass learnt
	// of its shape, handed to failed when a job of that shape already
	// found no place in the pass's view (nil otherwise: failed finds them).
	req      *policy.Request
	unplaced *unplaced
	// pinned is the GPU or node a pinned job's request named, unpinned
	// where the policy alone would put it in the same view (the decision
	// says both; "": nowhere).
	pinned, unpinned string
}

// negotiation is one placement's reservations in flight.
type negotiation struct {
	a       *attempt
	place   policy.Placement
	victims []string
	calls   []ctlCall
	replies []events.ControlReply
	// waiting counts the calls not answered yet.
	waiting int
	// unanswered marks the calls that timed out or found no responder.
	unanswered []bool
}

// tryResult is what trying a job led to.
type tryResult int

const (
	// tryStarted: a placement is in flight; it resolves later.
	tryStarted tryResult = iota
	// tryFailed: nothing fits (or every candidate refused); the attempt
	// has ended (failed).
	tryFailed
	// tryWait: the job needs victims while placements are in flight; it
	// is tried again once they have resolved.
	tryWait
)

// holdAgain puts back, after a GPU's layout was read from its status, the
// reservations in flight there that the status does not show yet.
func (v *view) holdAgain(gs *gpuState, inflight []*negotiation, jobs map[string]*job) {
	for _, n := range inflight {
		for _, c := range n.calls {
			if c.gpu == gs.g.ID && !slices.ContainsFunc(gs.g.Allocs, func(a vram.Alloc) bool { return a.Owner == c.ctl.JobID }) {
				v.holdOn(gs, n.a.job, c.ctl.Job.VRAM, jobs)
			}
		}
	}
}

func sortAllocs(allocs []vram.Alloc) {
	slices.SortFunc(allocs, func(a, b vram.Alloc) int { return int(a.Offset - b.Offset) })
}

// try takes the attempt one step: the next untried candidate is
// negotiated, or, with none left, victims are chosen, or the attempt fails.
func (pl *placer) try(a *attempt) tryResult {
	j := a.job
	pl.view.refreshWorkload(pl.classes)
	req := pl.view.request(j)
	if known := pl.pass.unplacedShapes(); a.inPass && a.n == 0 && known != nil {
		if u := known[shapeOf(req)]; u != nil {
			// A job of this shape found no place and no victims in this
			// very view: neither will this one (failed gives the reason,
			// from the request and what the pass learnt of its shape).
			a.req, a.unplaced = req, u
			pl.failed(a)
			return tryFailed
		}
	}
	if a.tried == nil {
		a.tried = map[string]bool{}
	}
	if a.n < policy.MaxCandidates {
		a.n++
		a.cands = pl.plugins.Place(pl.view.sorted(), req)
		a.ranked = pl.view.rankedBy(a.cands)
		// The best candidate not tried yet (a refusal tries again from a
		// fresh ranking, up to MaxCandidates times).
		for i := range a.cands {
			if key := a.cands[i].Node + "/" + strings.Join(a.cands[i].GPUs, ","); !a.tried[key] {
				a.tried[key] = true
				if a.pinned == "" {
					// Asked once, when a pinned job is about to be placed
					// (not at every pass it waits through).
					if a.pinned = cmp.Or(req.PinGPU, req.PinNode); a.pinned != "" {
						a.unpinned = unpinnedChoice(req, pl.plugins, pl.view)
					}
				}
				pl.negotiate(a, a.cands[i], nil)
				return tryStarted
			}
		}
	}
	// With a round, the round alone stops running jobs (in queue order):
	// priority preemption beside it would undo what it decided, and the
	// two would take turns stopping the same jobs.
	if !a.preempting && len(a.cands) == 0 && !pl.cfg.DropUnschedulable && pl.plugins.Round == nil && pl.view.hasLowerPriorityRunning(j) {
		if len(pl.inflight) > 0 || pl.stops.pending() {
			a.n--
			return tryWait
		}
		pl.pass.refreshLostWork(pl.view, pl.jobs, pl.clock.now)
		if pre, ok := pl.plugins.Victims(pl.view.sorted(), req); ok {
			pl.preemptFor(j, pre.Victims)
			a.preempting = true
			a.cands = []policy.Placement{pre.Placement}
			a.ranked = pl.view.rankedBy(a.cands)
			pl.negotiate(a, pre.Placement, pre.Victims)
			return tryStarted
		}
	}
	pl.failed(a)
	return tryFailed
}

// negotiate sends a placement's reservations to the node actor and every
// GPU actor it touches, holds them in the view, and returns: the answers
// come back as inputs (answered).
func (pl *placer) negotiate(a *attempt, p policy.Placement, victims []string) {
	j := a.job
	pl.placements++
	j.placement = strconv.Itoa(pl.cfg.Incarnation) + "." + strconv.FormatUint(pl.placements, 10)
	calls := pl.controls(j, p, events.OpReserve)
	n := &negotiation{a: a, place: p, victims: victims, calls: calls, replies: make([]events.ControlReply, len(calls)),
		waiting: len(calls), unanswered: make([]bool, len(calls))}
	j.negotiating = n
	pl.inflight = append(pl.inflight, n)
	// Out of the queue while it is being placed: back in its place if the
	// placement fails (failed).
	pl.queue.remove(j)
	pl.view.holdInView(n, pl.jobs)
	if a.held != nil {
		a.held.add(j, p.GPUs)
	}
	for i, c := range calls {
		node := p.Node
		if node == "" && c.gpu != "" {
			node = gpuNode(j, c.gpu, pl.view, pl.nodes) // a training job's placement spans nodes
		}
		pl.out.ask(pl.calls, c, &call{node: node, gpu: c.gpu, sent: pl.clock.wall, neg: n, index: i})
	}
}

// answered records a reservation's answer (unanswered: it timed out or
// nobody received it) and resolves the placements whose answers are all in.
func (pl *placer) answered(c *call, rep events.ControlReply, unanswered bool) {
	n := c.neg
	if n.waiting == 0 {
		return
	}
	n.replies[c.index], n.unanswered[c.index] = rep, unanswered
	n.waiting--
	if (unanswered || rep.Down) && c.gpu != "" {
		// A GPU that did not answer, or whose supervisor answered that it
		// is down: trying it again at once would be refused again (on a
		// virtual clock, at the same instant, for ever).
		if pl.view.suspect(c.gpu) {
			pl.log.Warn("GPU suspect: a request went unanswered or found it down", zap.String("gpu", c.gpu))
		}
	}
	pl.resolveReady()
}

// resolveReady resolves the placements whose answers are all in, in the
// order they were decided (what the core records must not depend on which
// GPU answered first), a new job's only once its record is stored (a job
// runs only once accepted); then, with none in flight, what waited.
func (pl *placer) resolveReady() {
	for len(pl.inflight) > 0 && pl.inflight[0].waiting == 0 && pl.inflight[0].a.job.accepting == nil {
		first := pl.inflight[0]
		pl.inflight = slices.Delete(pl.inflight, 0, 1)
		pl.resolve(first)
	}
	if len(pl.inflight) == 0 && !pl.stops.pending() {
		pl.settled()
	}
}

// resolve ends a placement whose answers are all in: committed and
// running, or aborted and the job's next candidate tried.
func (pl *placer) resolve(n *negotiation) {
	a, j, p := n.a, n.a.job, n.place
	j.negotiating = nil
	var refused []string
	var undo []ctlCall
	for i, r := range n.replies {
		if r.OK {
			undo = append(undo, n.calls[i])
			continue
		}
		who := p.Node
		if n.calls[i].gpu != "" {
			who = n.calls[i].gpu
		}
		refused = append(refused, who+": "+r.Reason)
	}
	if j.terminal() {
		// Cancelled while its reservations were in flight.
		pl.view.unholdInView(n, pl.jobs)
		pl.out.abort(j, undo)
		if a.submit != nil && j.answer == nil {
			pl.out.answer(a.submit.Reply, j, events.SubmitReply{JobID: j.id, State: j.state})
		}
		return
	}
	if len(refused) > 0 {
		pl.view.unholdInView(n, pl.jobs)
		pl.out.abort(j, undo)
		if a.held != nil {
			a.held.remove(j, p.GPUs)
		}
		for i, r := range n.replies {
			// The refusing GPU's attached status corrects the view; the
			// refusing node's holds free what no job runs on any more.
			pl.refusalStatus(p.Node, n.calls[i].gpu, r)
			if n.calls[i].gpu == "" && !r.OK {
				pl.refusalHolds(p.Node, r.Holds)
			}
		}
		a.refusals = append(a.refusals, strings.Join(refused, "; "))
		if j.spec.Training != nil {
			pl.log.Warn("training job's placement refused", zap.String("job", j.id), zap.Strings("refusals", refused))
			pl.training.unplace(j.id) // the next round allocates it again
			return
		}
		if a.preempting {
			pl.failed(a)
			return
		}
		if pl.try(a) == tryWait {
			pl.waiting = append(pl.waiting, a)
		}
		return
	}
	pl.view.confirmInView(n, pl.jobs)
	// Commits are sent without waiting: each actor holds the reservation,
	// and NATS keeps one connection's messages in order, so the commit
	// reaches it before anything the scheduler sends later. Should a commit
	// be lost, the reservation expires, the GPU reports "expired", and the
	// job is re-queued as lost (applyStatus): nothing leaks, nothing is lost.
	pl.out.sendAll(pl.controls(j, p, events.OpCommit))
	pl.placed(j, p, a, n.victims)
	if a.submit != nil {
		pl.out.answer(a.submit.Reply, j, events.SubmitReply{JobID: j.id, State: events.JobPlaced, Node: j.node, GPUs: j.gpus})
	}
}

// settled runs, once no placement or stop is in flight, the attempts that waited
// for it (to choose victims) and the rest of a pass that stopped for one.
// On a virtual clock they wait for the instant to settle (the shell's
// PhaseDecide timer, TimerPass): the last answer may come before or after
// GPU events of the same instant on another subscription, and what the
// pass decides must not depend on which came first.
func (pl *placer) settled() {
	if pl.cfg.Virtual && !pl.settling {
		pl.settleDue = true
		return
	}
	pl.settleDue = false
	for len(pl.waiting) > 0 && len(pl.inflight) == 0 && !pl.stops.pending() {
		a := pl.waiting[0]
		pl.waiting = slices.Delete(pl.waiting, 0, 1)
		if pl.try(a) == tryWait {
			pl.waiting = slices.Insert(pl.waiting, 0, a)
			return
		}
	}
	if pl.pass != nil && len(pl.inflight) == 0 && !pl.stops.pending() {
		pl.continuePass()
	}
}

// refusalHolds frees, at a node actor that refused a reservation, the
// committed holds of jobs this scheduler neither runs nor is placing on
// that node, nor waits to read back there: a job no scheduler knows any
// more (one a restart lost, or a hold whose release was lost) held them
// for good, and the node refused, again and again, what the view saw room
// for (at one instant, for ever, on a virtual clock). The answer is to a
// call made to that node: it speaks for itself only. A job the
// predecessor ran and no GPU has shown yet is left alone while the
// restart's grace lasts (its node is not known until then). An
// uncommitted hold of a job not being placed there now is freed too: a
// reservation that reached the node after its call had timed out (one a
// cut-off scheduler kept and sent when it healed) expires only after its
// TTL, and until then the node would refuse the job's next reservation,
// again and again at one instant of a virtual clock.
func (pl *placer) refusalHolds(node string, holds []events.NodeHold) {
	graceOver := pl.owed.graceOver(pl.clock.wall)
	for _, h := range holds {
		if j, known := pl.jobs[h.JobID]; known && ((j.state == stateRunning && j.node == node) ||
			(j.negotiating != nil && j.negotiating.place.Node == node)) {
			continue
		}
		if r, journaled := pl.owed.journaled[h.JobID]; journaled && r.Node == node {
			continue
		}
		if _, inherited := pl.owed.inherited[h.JobID]; inherited && !graceOver {
			continue
		}
		pl.log.Warn("node holds CPU and memory for a job that does not run there: freeing them", zap.String("node", node),
			zap.String("job", h.JobID), zap.Float64("cpu", h.CPU), zap.Int64("memory", h.Memory))
		pl.stats.nodeStrays++
		pl.out.freeAtNode(node, h.JobID)
	}
}
