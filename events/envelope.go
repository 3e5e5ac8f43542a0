package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
)

// SchemaVersion is the version of every payload in this package; a change
// to a payload is a change to a public API and bumps it.
const SchemaVersion = "1"

// Event is the CloudEvents 1.0 structured envelope every event travels in,
// with the extensions simtime (simulated time) and seq (counting from 1 per
// source, so a restarted actor starts a new sequence).
type Event struct {
	SpecVersion     string    `json:"specversion"`
	ID              string    `json:"id"`
	Source          string    `json:"source"`
	Type            string    `json:"type"`
	Time            time.Time `json:"time"`
	Subject         string    `json:"subject,omitempty"`
	DataContentType string    `json:"datacontenttype"`
	DataSchema      string    `json:"dataschemaversion"`
	SimTime         time.Time `json:"simtime"`
	Seq             uint64    `json:"seq"`
	Data            any       `json:"data"`
}

// Envelope is an event as a reader that knows its data's type reads it:
// the fields of the envelope it needs and the data, decoded in one pass.
type Envelope[T any] struct {
	Source  string    `json:"source"`
	SimTime time.Time `json:"simtime"`
	Data    T         `json:"data"`
}

// DataOf is an event read for its data alone (a node's heartbeat: the
// scheduler needs nothing else of its envelope).
type DataOf[T any] struct {
	Data T `json:"data"`
}

// Decoded is an Event as a reader gets it, with its data left raw.
type Decoded struct {
	SpecVersion string          `json:"specversion"`
	ID          string          `json:"id"`
	Source      string          `json:"source"`
	Type        string          `json:"type"`
	Time        time.Time       `json:"time"`
	Subject     string          `json:"subject,omitempty"`
	SimTime     time.Time       `json:"simtime"`
	Seq         uint64          `json:"seq"`
	Data        json.RawMessage `json:"data"`
}

// Publisher is what an Emitter sends on: a *nats.Conn satisfies it.
type Publisher interface {
	Publish(subject string, data []byte) error
}

// Emitter publishes one actor's events: it owns the actor's source name and
// sequence, so it belongs to exactly one goroutine.
type Emitter struct {
	pub    Publisher
	source string
	seq    uint64
}

// NewEmitter returns an emitter for source (e.g. "/gpu/node-0/gpu-3/1").
func NewEmitter(pub Publisher, source string) *Emitter {
	return &Emitter{pub: pub, source: source}
}

// Source is the emitter's CloudEvents source.
func (e *Emitter) Source() string { return e.source }

// Emit encodes the event once and publishes it on subject. typ is the
// CloudEvents type ("gpusched.job.placed"), subject the entity it concerns.
func (e *Emitter) Emit(natsSubject, typ, subject string, simTime time.Time, data any) error {
	b, err := e.encode(typ, subject, simTime, data)
	if err != nil {
		return err
	}
	return e.pub.Publish(natsSubject, b)
}

// EmitEncoded is Emit for data already encoded as JSON (by
// goccy/go-json's Marshal, as Emit would encode it): the event is the
// same bytes Emit would send for the value data encodes, without encoding
// it again.
func (e *Emitter) EmitEncoded(natsSubject, typ, subject string, simTime time.Time, data []byte) error {
	b, err := e.encode(typ, subject, simTime, nil)
	if err != nil {
		return err
	}
	// The envelope ends with its data, nil here: `"data":null}`. The
	// encoded data takes null's place.
	const tail = "null}"
	if !bytes.HasSuffix(b, []byte(tail)) {
		return fmt.Errorf("event %s: the envelope does not end with its data", typ)
	}
	b = append(append(b[:len(b)-len(tail)], data...), '}')
	return e.pub.Publish(natsSubject, b)
}

// RequestPublisher is a Publisher that can also set a reply subject (a
// *nats.Conn is one).
type RequestPublisher interface {
	PublishRequest(subject, reply string, data []byte) error
}

// EmitReply is Emit with a reply subject: an event that also asks for an
// answer (a node heartbeat asks for leases). Observers ignore the reply.
func (e *Emitter) EmitReply(natsSubject, reply, typ, subject string, simTime time.Time, data any) error {
	b, err := e.encode(typ, subject, simTime, data)
	if err != nil {
		return err
	}
	if rp, ok := e.pub.(RequestPublisher); ok {
		return rp.PublishRequest(natsSubject, reply, b)
	}
	return e.pub.Publish(natsSubject, b)
}

func (e *Emitter) encode(typ, subject string, simTime time.Time, data any) ([]byte, error) {
	e.seq++
	ev := Event{
		SpecVersion:     "1.0",
		ID:              uuid.NewString(),
		Source:          e.source,
		Type:            typ,
		Time:            time.Now().UTC(),
		Subject:         subject,
		DataContentType: "application/json",
		DataSchema:      SchemaVersion,
		SimTime:         simTime.UTC(),
		Seq:             e.seq,
		Data:            data,
	}
	// goccy/go-json writes the same JSON as encoding/json, at about twice
	// the speed: every GPU and job event goes through here.
	return gojson.Marshal(ev)
}

// Type builds a CloudEvents type: "gpusched.<family>.<type>".
func Type(family, typ string) string { return typePrefix + family + "." + typ }

// typePrefix begins every event type (Type).
const typePrefix = "gpusched."

// ParseType is the family and type an event type names (Type's inverse:
// "job", "placed" for "gpusched.job.placed"); false for a type Type did
// not write.
func ParseType(t string) (family, typ string, ok bool) {
	rest, ok := strings.CutPrefix(t, typePrefix)
	if !ok {
		return "", "", false
	}
	family, typ, ok = strings.Cut(rest, ".")
	return family, typ, ok && family != "" && typ != ""
}

// JobEventType is the job state a job event's type names ("placed" for
// "gpusched.job.placed"); false for any other event.
func JobEventType(t string) (string, bool) {
	family, typ, ok := ParseType(t)
	if !ok || family != "job" {
		return "", false
	}
	return typ, true
}

// Reply answers a request with v encoded as JSON; a nil reply subject (a
// plain publish) is ignored.
func Reply(m *nats.Msg, v any) error {
	if m.Reply == "" {
		return nil
	}
	b, err := gojson.Marshal(v)
	if err != nil {
		return err
	}
	return m.Respond(b)
}

// Redelivered reports whether m was delivered by JetStream (from a stream,
// to a consumer's deliver subject or a pull's reply subject): its reply
// subject is then JetStream's acknowledgement subject. Whoever can read a
// stream and create a consumer can have a stored message delivered to any
// subject of its account, so a control handler acts only on a message that
// a sender published there, never on one replayed from a stream.
func Redelivered(m *nats.Msg) bool {
	return strings.HasPrefix(m.Reply, "$JS.ACK.") || m.Header.Get("Nats-Stream") != ""
}
