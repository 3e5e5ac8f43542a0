package core

import (
	"time"

	gojson "github.com/goccy/go-json"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
)

// The scheduler's requests that it does not wait for. A describe is sent
// with a reply subject under the scheduler's own inbox; the reply arrives
// in the mailbox like any message and is matched with the request it
// answers. So a GPU that never answers (hung, cut off, or a node naming
// GPUs it does not have) costs the loop nothing but its bookkeeping, and a
// reply is believed only about what was asked: the GPU and node the
// request named.

// maxDescribesPerNode bounds the describes in flight to one node's GPUs: a
// node naming many GPUs that never answer costs at most this many
// outstanding requests, and only its own GPUs wait. A real node has at
// most model.MaxGPUsPerNode GPUs from --gpus (a cluster file may have
// more; they are asked a few at a time).
const maxDescribesPerNode = 8

// MaxHeartbeatGPUs bounds the GPUs a node's heartbeat may name: a
// heartbeat naming more is dropped (logged), whoever sent it.
const MaxHeartbeatGPUs = 1024

// call is a request in flight: what it asked of whom, and when (wall time).
type call struct {
	node, gpu string
	sent      time.Time
	// neg is the placement a reservation belongs to, stop the stop a
	// preempt or release belongs to (both nil for a describe); index
	// which of their calls this is.
	neg   *negotiation
	stop  *stopping
	index int
	// beat is, for a describe a heartbeat asked for, that heartbeat's
	// number: the lease it would have granted the GPU is granted on the
	// answer (onReply).
	beat uint64
	// report names the training job whose state a training round asked
	// this GPU for (training.go).
	report string
}

// describe asks a GPU actor for its full status (with the specs of its
// jobs), without waiting: the reply is handled by onReply. A GPU already
// asked is not asked again until its reply comes or the call times out;
// a node with maxDescribesPerNode calls in flight is not asked more.
func (s *Core) describe(node, gpuID string) { s.describeAfter(node, gpuID, 0) }

// describeAfter is describe for a GPU that node's heartbeat beat named
// alive at an incarnation this scheduler has not read (0: no heartbeat).
func (s *Core) describeAfter(node, gpuID string, beat uint64) {
	now := s.wall
	if s.calls.describing(node, gpuID, beat, now) {
		return
	}
	if s.calls.nodeFull(node) {
		s.expireCalls(now)
		if s.calls.nodeFull(node) {
			// Asked as soon as one of the node's describes is answered
			// (askWaiting), with the heartbeat's beat: which GPUs a
			// heartbeat gets read, and granted, must not depend on how
			// many answers had come back when it arrived.
			s.calls.wait(node, gpuID, beat)
			return
		}
	}
	number, reply := s.calls.open(&call{node: node, gpu: gpuID, sent: now, beat: beat})
	b, _ := gojson.Marshal(events.Control{Op: events.OpDescribe, WithSpecs: true, Call: number})
	s.out.send(s.cfg.Subjects.GPUCtl(node, gpuID), reply, b)
}

// stopAnswered takes a GPU's answer to a stop (stops.answered); once no
// stop and no placement is in flight, what waited for them goes on.
func (s *Core) stopAnswered(c *call, rep events.ControlReply) {
	s.stops.answered(c, rep, s.wall)
	if !s.stops.pending() && !s.place.negotiating() {
		s.place.settled()
	}
}

// expireCalls forgets the calls unanswered for longer than the call
// timeout, in the order they were sent, and hands each to what it was
// for as unanswered: the GPU may be asked again.
func (s *Core) expireCalls(now time.Time) {
	for _, reply := range s.calls.late(now) {
		c, ok := s.calls.take(reply) // an earlier one's handling may have ended it
		if !ok {
			continue
		}
		late := events.ControlReply{Reason: "no answer within " + s.cfg.CallTimeout.String()}
		switch {
		case c.neg != nil:
			s.place.answered(c, late, true)
		case c.stop != nil:
			s.stopAnswered(c, late)
		case c.report != "":
			s.training.report(c, nil)
		default:
			s.calls.silent(c.gpu, now) // a describe
		}
	}
	s.calls.forgetSilences(now)
}

// askWaiting describes the GPUs of node that waited for a slot, in the
// order they came, while the node has slots: after an answer, which frees
// a slot at the instant the heartbeat came on a virtual clock. A slot a
// timeout frees is not filled before the node's next heartbeat (which
// asks afresh): a node whose GPUs never answer is asked at most
// maxDescribesPerNode describes a heartbeat, as before.
func (s *Core) askWaiting(node string) {
	for !s.calls.nodeFull(node) {
		w, ok := s.calls.nextWaiting(node)
		if !ok {
			return
		}
		s.describeAfter(node, w.gpu, w.beat)
	}
}

// silenceMemory is how long a GPU whose describe went unanswered is
// asked after the others: long next to a heartbeat period (a few seconds
// of wall time), so that a node naming more GPUs that never answer than
// maxDescribesPerNode does not keep its other GPUs unasked.
const silenceMemory = time.Minute

// refusalStatus folds in the status a refusing GPU attached to its reply
// to a reservation, if it is about that GPU: a reply is believed only
// about what was asked (a node's GPU could otherwise describe another
// node's GPU in a refusal).
func (s *Core) refusalStatus(node, gpu string, r events.ControlReply) {
	if r.OK || r.Status == nil || gpu == "" {
		return
	}
	if fe := validStatus(node, gpu, *r.Status); fe != nil {
		s.log.Warn("refusal's status dropped", zap.String("gpu", gpu), zap.String("node", node), zap.String("field", fe.Field),
			zap.String("reason", fe.Message))
		return
	}
	st := *r.Status
	st.Change, st.JobID = "", "" // a state, not a change
	s.applyStatus(st, s.now)
}

// onReply handles a reply to one of the scheduler's calls. A reply nobody
// asked for (late, after its call timed out; a second answer; a forgery)
// is dropped, and so is one about another GPU or node than the request
// named: a node speaks for the GPUs it was asked about only.
func (s *Core) onReply(m *Msg) {
	c, ok := s.calls.take(m.Subject)
	if !ok {
		s.stats.stale++
		s.log.Debug("reply to no call in flight dropped", zap.String("subject", m.Subject))
		return
	}
	if c.neg != nil {
		s.onReservationReply(c, m)
		return
	}
	if c.report != "" {
		s.training.report(c, m)
		return
	}
	if c.stop != nil {
		var rep events.ControlReply
		if m.NoResponders {
			rep.Reason = "no responders"
		} else if err := gojson.Unmarshal(m.Data, &rep); err != nil {
			rep = events.ControlReply{Reason: "bad answer: " + err.Error()}
		} else if rep.Error != nil {
			rep = events.ControlReply{Reason: rep.Error.Error()}
		}
		s.stopAnswered(c, rep)
		return
	}
	s.calls.heard(c.gpu)
	defer s.askWaiting(c.node)
	if m.NoResponders {
		return // no responders: no such GPU actor (yet)
	}
	var rep events.ControlReply
	if err := gojson.Unmarshal(m.Data, &rep); err != nil || rep.Error != nil || rep.Status == nil {
		return // a refusal ("down, restarting"): the next heartbeat asks again
	}
	st := *rep.Status
	if fe := validStatus(c.node, c.gpu, st); fe != nil {
		// About another GPU or node than was asked, or malformed.
		s.log.Warn("describe reply dropped", zap.String("gpu", c.gpu), zap.String("node", c.node), zap.String("field", fe.Field),
			zap.String("reason", fe.Message))
		return
	}
	// A describe reports a state, not a change: a change it claimed
	// (a completion) would otherwise be counted twice.
	st.Change, st.JobID = "", ""
	if st.Ended == nil {
		// A full status, even when the GPU has no job and nothing ended
		// there: its JSON then carries neither specs nor "ended", and
		// hasSpecs cannot tell it from a change. Read as a change, the GPU
		// was described again at once, for ever (on a virtual clock at one
		// instant: TestADescribeOfAnIdleGPUIsAFullStatus).
		st.Ended = []events.EndedJob{}
	}
	s.applyStatus(st, s.now)
	if gs, ok := s.view.gpus[c.gpu]; ok && !gs.described && s.restart.catchingUp() && st.Incarnation == gs.status.Incarnation &&
		st.Version < gs.version {
		// A restarted scheduler's full read that a newer status of the
		// GPU overtook (its events and the answers come on two
		// subscriptions): older than the view, it was not read, and the
		// GPU would count as unread until the restart's bound — holding
		// every placement that long, in one run of a seed and not in the
		// next. Asked again: the answer is as new as the view.
		s.describe(c.node, c.gpu)
	}
	if gs, ok := s.view.gpus[c.gpu]; ok && s.cfg.Virtual && !gs.g.Alive && st.Incarnation == gs.status.Incarnation && st.Incarnation > gs.dead {
		// A suspect GPU that answers is reachable: trusted again. On a
		// scaled clock its node's next heartbeat says so; a virtual
		// clock's nodes heartbeat once, and a GPU made suspect by a
		// dropped answer would stay so for good.
		gs.g.Alive = true
		s.view.cluster.Touch(gs.g)
		s.dirty = true
		s.log.Info("GPU trusted again: it answered", zap.String("gpu", c.gpu))
	}
	// A GPU a heartbeat asked about (one it named alive at an incarnation
	// the scheduler had not read, so not granted then) gets at once the
	// lease that heartbeat would have granted, counted by its node from
	// when the heartbeat left: waiting for the next heartbeat (a period
	// later) left a GPU that rejoined near the end of its own lease to
	// fence itself again just after the scheduler had placed jobs on it.
	// Whether the view learned the GPU from this answer or, in between,
	// from a status it published (a restarted scheduler's stop makes it
	// say it released a job) does not matter: either way the heartbeat
	// granted it nothing, and which came first is goroutine order at one
	// instant. Safe as any grant: the node vouched
	// for this incarnation in that heartbeat, the GPU's lease ends before
	// the one the scheduler keeps for it, and a GPU never shortens its
	// lease for an older grant.
	if gs, ok := s.view.gpus[c.gpu]; ok && c.beat > 0 && s.cfg.Lease > 0 &&
		gs.status.Incarnation == st.Incarnation && st.Incarnation > gs.dead && gs.status.Node == c.node {
		s.out.replyTo(s.cfg.Subjects.NodeLease(c.node), events.LeaseGrant{Node: c.node, Beat: c.beat, LeaseMS: s.cfg.Lease.Milliseconds(),
			GPUs: []events.HeartbeatGPU{{GPU: c.gpu, Incarnation: st.Incarnation, Alive: true}}})
	}
}

// onReservationReply takes the answer to a reservation: a refusal, an
// error or no responder count as refused (the last two, and a timeout,
// make the GPU suspect).
func (s *Core) onReservationReply(c *call, m *Msg) {
	if m.NoResponders {
		s.place.answered(c, events.ControlReply{Reason: "no responders"}, true)
		return
	}
	var rep events.ControlReply
	if err := gojson.Unmarshal(m.Data, &rep); err != nil {
		s.place.answered(c, events.ControlReply{Reason: "bad answer: " + err.Error()}, false)
		return
	}
	if rep.Error != nil {
		rep = events.ControlReply{Reason: rep.Error.Error()}
	}
	s.place.answered(c, rep, false)
}
