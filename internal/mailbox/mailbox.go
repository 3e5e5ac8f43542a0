// Package mailbox is an actor's queue of NATS messages: unbounded, never
// blocking the sender, holding no memory while empty, and read by waiting
// on one channel. GPU and node actors use it, so that one slow or hung
// actor never stalls the subscription that feeds its neighbours.
package mailbox

import (
	"sync"

	"github.com/nats-io/nats.go"
)

// Queue is a mailbox. Wake has a value whenever messages may be waiting;
// the reader takes one per wake (Take sets Wake again when more wait), so
// its other events get their turn in between, as with a channel.
type Queue struct {
	mu   sync.Mutex
	msgs []*nats.Msg
	head int
	// Wake is what the reader waits on.
	Wake chan struct{}
}

// New returns an empty mailbox.
func New() *Queue { return &Queue{Wake: make(chan struct{}, 1)} }

// Put appends m and wakes the reader; it never blocks.
func (q *Queue) Put(m *nats.Msg) {
	q.mu.Lock()
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
	q.Signal()
}

// Signal wakes the reader (for callers that keep more than messages).
func (q *Queue) Signal() {
	select {
	case q.Wake <- struct{}{}:
	default:
	}
}

// Take removes the oldest message; ok is false when there is none.
func (q *Queue) Take() (m *nats.Msg, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.msgs) {
		q.msgs, q.head = nil, 0
		return nil, false
	}
	m = q.msgs[q.head]
	q.msgs[q.head] = nil
	q.head++
	if q.head == len(q.msgs) {
		q.msgs, q.head = q.msgs[:0], 0
		if cap(q.msgs) > 64 {
			q.msgs = nil // a burst's backing array is not kept
		}
	} else {
		q.Signal()
	}
	return m, true
}
