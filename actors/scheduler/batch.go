package scheduler

import (
	"slices"
	"strconv"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/events"
)

// Batched controls. The core publishes each control on its actor's
// subject with a reply subject of its own; for a node whose heartbeat says
// it takes them batched (the core's Send effect says Batched), the shell instead gathers
// the controls for that node and its GPUs and sends them as one message
// on the node's batch subject (events.ControlBatch) once the input that
// made them is handled, so that a placement's reservations at the node
// actor and its GPUs, and the commits of the placements one answer
// resolves, cost one message per node instead of one per actor. (Waiting
// for the mailbox to drain, to batch across inputs, was tried: it batched
// more — 21 messages for 80 placements' reserves and commits — but held
// each placement back for the burst, and placements/s fell by about a
// tenth in paired runs.) The answers come back one by one on the
// batch's reply subject, each naming its control's call; the shell hands
// each to the core as the answer on that call's own reply subject. An
// answer is believed only from the node the batch went to and only for a
// call that batch carried: a node's credentials may answer the requests it
// received (allow_responses), and nothing else.
//
// Everything for one node goes the same way, batched or not, so the
// node's actors see the core's controls in the order it sent them.

// batcher holds the controls waiting to be sent and the batches whose
// answers are awaited.
type batcher struct {
	// nodes are the nodes with controls waiting, in the order of their
	// first; items their controls (an item without a call is not answered).
	nodes []string
	items map[string][]events.BatchItem
	// seq numbers the batches' reply subjects.
	seq uint64
	// sent are the batches whose answers are awaited, by reply subject.
	sent map[string]*sentBatch
}

// sentBatch is a batch sent: when, and the calls it carried that have not
// been answered yet, in the order they were made (a few: a slice).
type sentBatch struct {
	at      time.Time
	pending []string
}

func newBatcher() *batcher {
	return &batcher{items: map[string][]events.BatchItem{}, sent: map[string]*sentBatch{}}
}

// hold keeps a control for node (gpu empty: its node actor) until the
// next flush; reply is the core's reply subject for it (empty: no answer).
func (s *Scheduler) hold(node, gpu, reply string, data []byte) {
	b := s.batch
	if _, ok := b.items[node]; !ok {
		b.nodes = append(b.nodes, node)
	}
	b.items[node] = append(b.items[node], events.BatchItem{GPU: gpu, Call: strings.TrimPrefix(reply, s.inbox), Control: data})
}

// flushBatches sends the controls waiting, one batch per node (more if
// one node has more than events.MaxBatchItems), in the order the nodes
// were first written to.
func (s *Scheduler) flushBatches() {
	b := s.batch
	if len(b.nodes) == 0 {
		return
	}
	now := s.wallNow()
	for _, node := range b.nodes {
		items := b.items[node]
		for len(items) > 0 {
			k := min(len(items), events.MaxBatchItems)
			s.sendBatch(node, items[:k], now)
			items = items[k:]
		}
		delete(b.items, node)
	}
	b.nodes = b.nodes[:0]
}

// sendBatch sends one batch to node, remembering the calls whose answers
// must come back on its reply subject.
func (s *Scheduler) sendBatch(node string, items []events.BatchItem, now time.Time) {
	b := s.batch
	data, err := gojson.Marshal(events.ControlBatch{Items: items})
	if err != nil {
		s.log.Error("control batch not encoded", zap.String("node", node), zap.Error(err))
		return
	}
	var reply string
	var sb *sentBatch
	for _, it := range items {
		if it.Call == "" {
			continue
		}
		if sb == nil {
			b.seq++
			reply = s.inbox + "b" + strconv.FormatUint(b.seq, 10)
			sb = &sentBatch{at: now}
			b.sent[reply] = sb
		}
		sb.pending = append(sb.pending, it.Call)
	}
	subject := s.cfg.Subjects.NodeBatch(node)
	if s.isCut() {
		err = s.keep(func() error { return s.publish(subject, reply, data) })
	} else {
		err = s.publish(subject, reply, data)
	}
	if reply != "" {
		s.trace(StageSent)
	}
	if err != nil {
		// The calls time out in the core, as a lost message's would.
		s.log.Warn("control batch not sent", zap.String("node", node), zap.Error(err))
	}
}

// isBatchAnswer says whether subject is a batch's reply subject.
func (s *Scheduler) isBatchAnswer(subject string) bool {
	return strings.HasPrefix(subject, s.inbox+"b")
}

// batchAnswer hands the core the answers a message on a batch's reply
// subject carries: one answer, to the call it names if that batch carried
// it, or, when nobody received the batch, "no responders" to every call
// of it not answered yet, in the order they were made. Anything else is
// dropped.
func (s *Scheduler) batchAnswer(m *core.Msg) {
	b := s.batch
	sb, ok := b.sent[m.Subject]
	if !ok {
		return // its calls were answered, or swept: late
	}
	if m.NoResponders {
		delete(b.sent, m.Subject)
		for _, call := range sb.pending {
			s.step(core.Input{Msg: &core.Msg{Subject: s.inbox + call, NoResponders: true}})
		}
		return
	}
	s.trace(StageAnswer)
	var named events.CallRef
	i := -1
	if err := gojson.Unmarshal(m.Data, &named); err == nil {
		i = slices.Index(sb.pending, named.Call)
	}
	if i < 0 {
		s.log.Debug("answer to no call of its batch dropped", zap.String("subject", m.Subject), zap.String("call", named.Call))
		return
	}
	if sb.pending = slices.Delete(sb.pending, i, i+1); len(sb.pending) == 0 {
		delete(b.sent, m.Subject)
	}
	s.step(core.Input{Msg: &core.Msg{Subject: s.inbox + named.Call, Data: m.Data}})
}

// sweepBatches forgets the batches sent longer ago than twice the call
// timeout: the core has timed their calls out, and a late answer would
// answer nothing.
func (s *Scheduler) sweepBatches() {
	b := s.batch
	now := s.wallNow()
	for reply, sb := range b.sent {
		if now.Sub(sb.at) >= 2*s.core.Timing().CallTimeout {
			delete(b.sent, reply)
		}
	}
}
