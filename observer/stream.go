package observer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpusched/gpusched/bus"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
)

// History says where in the cluster's kept event stream a reader starts.
// The zero value reads live events only.
type History struct {
	// FromStart replays every event the stream still keeps.
	FromStart bool
	// Since replays the events of this last stretch of wall time.
	Since time.Duration
	// Durable names a durable consumer: a reader restarted with the same
	// name continues after the last event it took, without gaps (on its
	// first start it begins where FromStart or Since say, else live).
	Durable string
	// AfterID and AfterTime resume after an event already taken (a
	// recording's last line): reading starts a little before its time and
	// skips up to and including it.
	AfterID   string
	AfterTime time.Time
	// OnGap, when set, hears of events the stream discarded (its age or
	// size limits) before this reader got to them: how many.
	OnGap func(missed uint64)
}

// resumeMargin is how far before a resumed event's own time reading
// starts: the stream stamps an event when it stores it, a little after the
// publisher stamped it.
const resumeMargin = 5 * time.Second

// Replays reports whether h needs the kept stream.
func (h History) Replays() bool {
	return h.FromStart || h.Since > 0 || h.Durable != "" || h.AfterID != ""
}

// ErrNoEventStream says the cluster keeps no event stream.
var ErrNoEventStream = errors.New("the cluster keeps no event stream (it runs without JetStream): " +
	"--since, --from-start and --durable need a cluster started with its default store, --data-dir or --memory")

// ReadEvents calls fn with every event of the cluster, in order, until ctx
// ends or fn fails. From the cluster's kept event stream when there is one
// (an ordered consumer, which resumes after a reconnect with no gap, or a
// durable one, see History); else, and only for live reading, a plain
// subscription.
func ReadEvents(ctx context.Context, nc *nats.Conn, subjects events.Subjects, h History, fn func(subject string, data []byte) error) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	lookup, cancel := context.WithTimeout(ctx, 5*time.Second)
	// Credentials that may not read the history (a tenant's) are refused
	// by the server at once: that ends the lookup instead of its timeout.
	denied, stopWatch := bus.Denials(nc, "$JS.API.STREAM.INFO."+durable.EventStream(subjects.Prefix))
	refused := make(chan error, 1)
	go func() {
		select {
		case err := <-denied:
			cancel()
			refused <- err
		case <-lookup.Done():
			refused <- nil
		}
	}()
	stream, err := js.Stream(lookup, durable.EventStream(subjects.Prefix))
	cancel()
	refusal := <-refused
	stopWatch()
	if refusal != nil && h.Replays() {
		return fmt.Errorf("the event history: %w (these credentials may read live events only)", refusal)
	}
	resumeOnly := h.AfterID != "" && !h.FromStart && h.Since == 0 && h.Durable == ""
	if err != nil {
		if h.Replays() && !resumeOnly {
			if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
				errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
				return ErrNoEventStream
			}
			return fmt.Errorf("the event stream %s: %w", durable.EventStream(subjects.Prefix), err)
		}
		return readLive(ctx, nc, subjects, fn)
	}
	policy, start := jetstream.DeliverNewPolicy, (*time.Time)(nil)
	switch {
	case h.FromStart:
		policy = jetstream.DeliverAllPolicy
	case h.Since > 0:
		t := time.Now().Add(-h.Since)
		policy, start = jetstream.DeliverByStartTimePolicy, &t
	case h.AfterID != "":
		t := h.AfterTime.Add(-resumeMargin)
		policy, start = jetstream.DeliverByStartTimePolicy, &t
	}
	skipping := resumeOnly
	var cons jetstream.Consumer
	if h.Durable != "" {
		// A durable reader resumes after the last event it acknowledged:
		// events its last run fetched but never took come again. (The
		// consumer is made anew from that point: a pull consumer would
		// otherwise hold them back until their ack wait ran out.)
		var startSeq uint64
		if old, err := stream.Consumer(ctx, h.Durable); err == nil {
			startSeq = old.CachedInfo().AckFloor.Stream + 1
			if err := stream.DeleteConsumer(ctx, h.Durable); err != nil {
				return fmt.Errorf("resuming the durable reader %s: %w", h.Durable, err)
			}
			policy, start = jetstream.DeliverByStartSequencePolicy, nil
		}
		cons, err = stream.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: h.Durable, DeliverPolicy: policy,
			OptStartTime: start, OptStartSeq: startSeq, AckPolicy: jetstream.AckAllPolicy, FilterSubject: subjects.AllEvents(),
			Description: "gpusched observer " + h.Durable})
	} else {
		cons, err = stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subjects.AllEvents()},
			DeliverPolicy: policy, OptStartTime: start})
	}
	if err != nil {
		return fmt.Errorf("reading the event stream: %w", err)
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			it.Stop()
		case <-stopped:
		}
	}()
	defer close(stopped)
	var last jetstream.Msg
	var lastSeq uint64
	defer func() {
		// The last event taken, acknowledged for sure (with AckAll it
		// covers every one before it): where the next run resumes.
		if last != nil {
			actx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			last.DoubleAck(actx)
			cancel()
		}
	}()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return err
		}
		if skipping {
			if bytes.Contains(msg.Data(), []byte(`"id":"`+h.AfterID+`"`)) {
				skipping = false // the event already taken: the next is new
				continue
			}
			if meta, err := msg.Metadata(); err != nil || !meta.Timestamp.After(h.AfterTime.Add(2*resumeMargin)) {
				continue // taken before it
			}
			// Well past it without finding it (the stream no longer keeps
			// it): everything from here on.
			skipping = false
		}
		if meta, err := msg.Metadata(); err == nil && h.OnGap != nil {
			// The reader's events are consecutive in the stream, which
			// holds nothing else: a jump is events discarded unread.
			if seq := meta.Sequence.Stream; lastSeq > 0 && seq > lastSeq+1 {
				h.OnGap(seq - lastSeq - 1)
			}
			lastSeq = meta.Sequence.Stream
		}
		if err := fn(msg.Subject(), msg.Data()); err != nil {
			it.Stop()
			return err
		}
		if h.Durable != "" {
			msg.Ack()
			last = msg
		}
	}
}

// readLive reads live events from a plain subscription.
func readLive(ctx context.Context, nc *nats.Conn, subjects events.Subjects, fn func(subject string, data []byte) error) error {
	ch := make(chan *nats.Msg, 8192)
	sub, err := nc.ChanSubscribe(subjects.AllEvents(), ch)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-ch:
			if events.Redelivered(m) {
				continue // a stored event someone pulled onto the live subjects
			}
			if err := fn(m.Subject, m.Data); err != nil {
				return err
			}
		}
	}
}

// lastEvents reads the last n events the cluster's stream keeps, oldest
// first, up to the stream's last one when asked (events stored later are
// not waited for); an error when there is no stream or it may not be read.
func lastEvents(ctx context.Context, nc *nats.Conn, subjects events.Subjects, n int, fn func(data []byte)) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	stream, err := js.Stream(ctx, durable.EventStream(subjects.Prefix))
	if err != nil {
		return err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return err
	}
	last, first := info.State.LastSeq, info.State.FirstSeq
	if last == 0 || info.State.Msgs == 0 {
		return nil
	}
	start := max(first, last-min(last, uint64(n))+1)
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start})
	if err != nil {
		return err
	}
	for {
		batch, err := cons.Fetch(int(min(last-start+1, 256)), jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			fn(m.Data())
			md, err := m.Metadata()
			if err == nil && md.Sequence.Stream >= last {
				return nil
			}
		}
		if batch.Error() != nil && !errors.Is(batch.Error(), nats.ErrTimeout) {
			return batch.Error()
		}
		if got == 0 {
			return nil // the rest was removed meanwhile (limits)
		}
	}
}
