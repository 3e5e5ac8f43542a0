package gpu

import (
	"sync"

	"github.com/nats-io/nats.go"
)

// mailbox is everything a GPU actor is sent: its queue of control
// messages, oldest first, and the last lease renewal and liveness ping
// from its node not yet read. The queue is unbounded and holds no memory
// while empty: a channel of MailboxSize messages would cost 2 KiB per GPU
// (200 MiB at 100,000 GPUs), and a hung actor's full channel would stall
// its node's other GPUs. Nothing blocks the sender; wake has a value
// whenever something may be waiting, so the actor waits on one channel
// (each channel an idle actor waits on costs memory too).
type mailbox struct {
	mu   sync.Mutex
	msgs []*nats.Msg
	head int
	wake chan struct{}
	// renewal is the newest lease renewal not read yet (leased: one is).
	renewal renewal
	leased  bool
	// ping is where the first ping not answered yet wants its answer.
	ping chan<- Liveness
}

func newMailbox() *mailbox { return &mailbox{wake: make(chan struct{}, 1)} }

// put appends m and wakes the reader.
func (b *mailbox) put(m *nats.Msg) {
	b.mu.Lock()
	b.msgs = append(b.msgs, m)
	b.mu.Unlock()
	b.signal()
}

func (b *mailbox) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// renew keeps r unless a renewal of the same incarnation to a later
// deadline is waiting already.
func (b *mailbox) renew(r renewal) {
	b.mu.Lock()
	if !b.leased || r.incarnation != b.renewal.incarnation || !b.renewal.until.After(r.until) {
		b.renewal, b.leased = r, true
	}
	b.mu.Unlock()
	b.signal()
}

// askLiveness keeps reply unless a ping is waiting already (its answer
// will do).
func (b *mailbox) askLiveness(reply chan<- Liveness) {
	b.mu.Lock()
	if b.ping == nil {
		b.ping = reply
	}
	b.mu.Unlock()
	b.signal()
}

// takeNode returns, and clears, the renewal and ping waiting.
func (b *mailbox) takeNode() (r renewal, leased bool, ping chan<- Liveness) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, leased, ping = b.renewal, b.leased, b.ping
	b.renewal, b.leased, b.ping = renewal{}, false, nil
	return r, leased, ping
}

// take removes the oldest message; ok is false when there is none. When
// more wait, wake is set again, so the reader's loop comes back for them
// one at a time (its timers get their turn in between, as with a channel).
func (b *mailbox) take() (m *nats.Msg, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.head == len(b.msgs) {
		b.msgs, b.head = nil, 0
		return nil, false
	}
	m = b.msgs[b.head]
	b.msgs[b.head] = nil
	b.head++
	if b.head == len(b.msgs) {
		b.msgs, b.head = b.msgs[:0], 0
		if cap(b.msgs) > 64 {
			b.msgs = nil // a burst's backing array is not kept
		}
	} else {
		b.signal()
	}
	return m, true
}
