package core

import (
	"fmt"
	"time"

	gojson "github.com/goccy/go-json"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// Ready is what a step asks of the world, as data (model: etcd raft's
// Ready): the controls to send, the events to emit, the answers to
// requests and the job records to store, in the order the core decided
// them. The core waits for none of it: what comes back — an actor's
// answer, the store's confirmation or refusal — is a later Input. The
// shell carries a Ready out before it steps the core again (its slices are
// the core's, reused by the next step); a harness records it.
type Ready struct {
	Effects []Effect
}

// EffectKind says what an Effect asks.
type EffectKind uint8

const (
	// Send publishes Body on Subject, a control for Node's actor (GPU:
	// one of its GPUs; empty: the node actor). With Reply, the answer
	// comes back on that subject (under Config.Inbox) as a Msg. Batched:
	// the node's last heartbeat said it takes its controls several to a
	// message (events.NodeHeartbeat.BatchCtl), so the shell may carry them
	// that way; the core's calls are the same either way.
	Send EffectKind = iota + 1
	// Emit publishes an event: Body is its data, encoded when the core
	// emitted it (Data is the same value, for in-process readers); the
	// shell's events.Emitter adds the envelope (source, seq, id, wall time).
	Emit
	// Answer answers a request: Body on Reply. The core has made sure it
	// fits Config.MaxPayload.
	Answer
	// NoResponders answers a request on Reply the way the NATS server
	// answers one nobody received (status 503, no body): it was never
	// taken, so its client may send it again.
	NoResponders
	// Store writes Record to the job journal without waiting. With
	// Confirm (a submission's first record: the job is accepted once it is
	// stored), the shell steps the core with Input.Stored once the store
	// has it, or Input.Unstored if it refuses it (at once or later). A
	// write that fails otherwise is the shell's to write again
	// (Input.Rewrite).
	Store
)

// Effect is one thing a step asks; which fields count depends on Kind.
type Effect struct {
	Kind EffectKind
	// Subject is where a Send or an Emit goes; Reply is a Send's reply
	// subject or the request an Answer or NoResponders answers.
	Subject, Reply string
	// Body is a Send's control, an Emit's data or an Answer's body, as
	// JSON.
	Body []byte
	// Node and GPU are a Send's actor; Batched, whether its node takes
	// controls batched.
	Node, GPU string
	Batched   bool
	// Type, ID and At are an Emit's CloudEvents type, subject and
	// simulated time; Data the value Body encodes.
	Type, ID string
	At       time.Time
	Data     any
	// Record and Confirm are a Store's.
	Record  *durable.Record
	Confirm bool
}

// Ready takes what the core has asked since the last Ready or Step (New
// may ask things too: a restarted core's first describes). Step returns
// it itself.
func (s *Core) Ready() Ready { return s.out.take() }

// outbox gathers what a step asks (Ready's effects), in order.
type outbox struct {
	effects []Effect
	log     *zap.Logger
	// maxPayload is Config.MaxPayload; batched the core's record of which
	// nodes take their controls batched (its heartbeats say so).
	maxPayload int
	batched    func(node string) bool
	// subjects name the actors' control subjects (freeAtNode).
	subjects events.Subjects
}

// take is what has been asked since the last take; the effects' slice is
// reused by the next step.
func (o *outbox) take() Ready {
	rd := Ready{Effects: o.effects}
	o.effects = o.effects[:0]
	return rd
}

// send asks for a control on subject, reply ("" for none) the subject its
// answer comes back on.
func (o *outbox) send(subject, reply string, body []byte) {
	e := Effect{Kind: Send, Subject: subject, Reply: reply, Body: body}
	if node, gpu, ok := events.ParseGPUCtl(subject); ok {
		e.Node, e.GPU = node, gpu
	} else if node, what, ok := events.ParseNodeSubject(subject); ok && what == "ctl" {
		e.Node = node
	}
	e.Batched = e.Node != "" && o.batched(e.Node)
	o.effects = append(o.effects, e)
}

// event is an event, its data encoded now: what is sent is the data as it
// was when emitted, whatever the rest of the step changes (false: data
// could not be encoded, logged).
func (o *outbox) event(subject, typ, id string, at time.Time, data any) (Effect, bool) {
	b, err := gojson.Marshal(data)
	if err != nil {
		o.log.Error("event not encoded", zap.String("subject", subject), zap.Error(err))
		return Effect{}, false
	}
	return Effect{Kind: Emit, Subject: subject, Type: typ, ID: id, At: at, Data: data, Body: b}, true
}

// emit asks for an event (event).
func (o *outbox) emit(subject, typ, id string, at time.Time, data any) {
	if e, ok := o.event(subject, typ, id, at, data); ok {
		o.effects = append(o.effects, e)
	}
}

// respond asks for b to answer reply; an answer larger than the bus
// carries becomes an error saying so (never silence: the asker would only
// time out).
func (o *outbox) respond(reply string, b []byte) {
	if reply == "" {
		return
	}
	if o.maxPayload > 0 && len(b) > o.maxPayload {
		o.log.Error("reply too large for the bus: answered with an error instead", zap.String("reply", reply), zap.Int("bytes", len(b)))
		b = TooLargeAnswer(len(b))
	}
	o.effects = append(o.effects, Effect{Kind: Answer, Reply: reply, Body: b})
}

// TooLargeAnswer is the error that answers a request whose answer, of n
// bytes, is larger than the bus carries.
func TooLargeAnswer(n int) []byte {
	msg := fmt.Sprintf("the answer is %d bytes, more than the bus carries: ask for less (cluster.snapshot {\"summary_only\":true}, a later page, job.list by state)", n)
	b, _ := gojson.Marshal(events.ErrorReply{Error: &model.FieldError{Field: "page", Message: msg}})
	return b
}

// noResponders asks for reply to be answered as nobody received it.
func (o *outbox) noResponders(reply string) {
	o.effects = append(o.effects, Effect{Kind: NoResponders, Reply: reply})
}

// write asks for rec to be stored in the job journal. rec is made when
// asked (Core.record copies the job's fields), so a record asked in the
// middle of a step — a submission's first — is the job as it was then,
// whatever the rest of the step changes (its placement, negotiated at
// once).
func (o *outbox) write(rec *durable.Record, confirm bool) {
	o.effects = append(o.effects, Effect{Kind: Store, Record: rec, Confirm: confirm})
}

// replyError answers m with an error naming field.
func (o *outbox) replyError(m *Msg, field, msg string) {
	o.reply(m, events.ErrorReply{Error: &model.FieldError{Field: field, Message: msg}})
}

// reply answers m with v encoded as JSON; a message without a reply
// subject (a plain publish) is not answered.
func (o *outbox) reply(m *Msg, v any) {
	o.replyTo(m.Reply, v)
}

// replyTo answers on reply with v encoded as JSON.
func (o *outbox) replyTo(reply string, v any) {
	if reply == "" {
		return
	}
	b, err := gojson.Marshal(v)
	if err != nil {
		o.log.Error("reply not encoded", zap.Error(err))
		return
	}
	o.respond(reply, b)
}

// answer answers j's submission on reply with v. The job was stored
// before it was accepted (accept); what changed since is written with the
// step's other records. The answer is kept: a submission repeating j's
// idempotency key gets it too (resubmitted).
func (o *outbox) answer(reply string, j *job, v any) {
	b, err := gojson.Marshal(v)
	if err != nil {
		o.log.Error("reply not encoded", zap.Error(err))
		return
	}
	j.answer = b
	for _, w := range j.answerWaiters {
		o.respond(w, b)
	}
	j.answerWaiters = nil
	o.respond(reply, b)
}

// emitAbout is emit for an event about job j: while j's first record
// waits for the store, its events wait with it (announce); a job the
// store refused is never announced.
func (o *outbox) emitAbout(j *job, subject, typ string, at time.Time, data any) {
	switch {
	case !j.unannounced:
		o.emit(subject, typ, j.id, at, data)
	case !j.refusedByStore:
		if e, ok := o.event(subject, typ, j.id, at, data); ok {
			j.heldEvents = append(j.heldEvents, e)
		}
	}
}

// announce emits what j's events waited for: its first record is stored
// (or the store refused it: then nothing, ever).
func (o *outbox) announce(j *job) {
	if !j.unannounced || j.refusedByStore {
		return
	}
	o.effects = append(o.effects, j.heldEvents...)
	j.heldEvents, j.unannounced = nil, false
}

// sendAll sends control messages without waiting (aborts and releases:
// an unanswered abort is harmless, the reservation expires by itself).
func (o *outbox) sendAll(calls []ctlCall) {
	for _, c := range calls {
		b, _ := gojson.Marshal(c.ctl)
		o.send(c.subject, "", b)
	}
}

// abort asks the actors of calls to abort what they reserved for j.
func (o *outbox) abort(j *job, calls []ctlCall) {
	aborts := make([]ctlCall, len(calls))
	for i, c := range calls {
		aborts[i] = ctlCall{subject: c.subject, ctl: events.Control{Op: events.OpAbort, JobID: j.id}, gpu: c.gpu}
	}
	o.sendAll(aborts)
}

// decodeRequest decodes m's body into req, answering a bad body itself; it
// reports whether the request can go on.
func (o *outbox) decodeRequest(m *Msg, req any) bool {
	if fe := events.DecodeStrict(m.Data, req); fe != nil {
		o.reply(m, events.ErrorReply{Error: fe})
		return false
	}
	return true
}

// maxPage bounds a requested page: far above any page there can be (a
// page holds hundreds), far below where page × size overflows.
const maxPage = 1 << 30

// validPage answers a page out of bounds with an error and reports whether
// page is valid.
func (o *outbox) validPage(m *Msg, page int) bool {
	if page < 0 || page > maxPage {
		o.replyError(m, "page", fmt.Sprintf("must be from 0 to %d, not %d", maxPage, page))
		return false
	}
	return true
}

// pageExists answers a page past the last with an error naming the pages
// there are, and reports whether page is one of them.
func (o *outbox) pageExists(m *Msg, page, pages int) bool {
	if page >= pages {
		o.replyError(m, "page", fmt.Sprintf("%d is past the last page: there are %d (0 to %d)", page, pages, pages-1))
		return false
	}
	return true
}

// freeAtNode tells node's actor to free what job id holds there (CPU and
// memory), without waiting for an answer.
func (o *outbox) freeAtNode(node, id string) {
	o.sendAll([]ctlCall{{subject: o.subjects.NodeCtl(node), ctl: events.Control{Op: events.OpRelease, JobID: id}}})
}
