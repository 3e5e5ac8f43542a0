package gpu

import (
	"sync"

	"github.com/nats-io/nats.go"

	queue "github.com/gpusched/gpusched/internal/mailbox"
)

// mailbox is everything a GPU actor is sent: its queue of control
// messages (unbounded, holding nothing while empty: a channel of 256 would
// cost 2 KiB per GPU, 200 MiB at 100,000 GPUs, and a hung actor's full
// channel would stall its node's other GPUs) and the last lease renewal
// and liveness ping from its node not yet read. All wake the actor through
// the queue's one channel (each channel an idle actor waits on costs
// memory too).
type mailbox struct {
	*queue.Queue
	mu sync.Mutex
	// renewal is the newest lease renewal not read yet (leased: one is).
	renewal renewal
	leased  bool
	// holds counts the renewals that held the clock (a virtual one) since
	// the actor last read them: it lets go of each once it has.
	holds int
	// ping is where the first ping not answered yet wants its answer.
	ping chan<- Liveness
	// closed is set once the actor is dead and its mailbox drained:
	// nothing more may enter (a hold taken for it would never be let go,
	// and a virtual clock would stand still for good).
	closed bool
}

func newMailbox() *mailbox { return &mailbox{Queue: queue.New()} }

// deliver queues m, calling hold first; it reports false, and holds
// nothing, once the mailbox is closed.
func (b *mailbox) deliver(m *nats.Msg, hold func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	hold()
	b.Put(m)
	return true
}

// renew keeps r unless a renewal of the same incarnation to a later
// deadline is waiting already; hold, when set, is called first (and
// counted in holds), unless the mailbox is closed.
func (b *mailbox) renew(r renewal, hold func()) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	if hold != nil {
		hold()
		b.holds++
	}
	if !b.leased || r.incarnation != b.renewal.incarnation || !b.renewal.until.After(r.until) {
		b.renewal, b.leased = r, true
	}
	b.mu.Unlock()
	b.Signal()
}

// askLiveness keeps reply unless a ping is waiting already (its answer
// will do).
func (b *mailbox) askLiveness(reply chan<- Liveness) {
	b.mu.Lock()
	if b.ping == nil {
		b.ping = reply
	}
	b.mu.Unlock()
	b.Signal()
}

// takeNode returns, and clears, the renewal and ping waiting, and how many
// holds the renewals since the last take carried.
func (b *mailbox) takeNode() (r renewal, leased bool, ping chan<- Liveness, holds int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, leased, ping, holds = b.renewal, b.leased, b.ping, b.holds
	b.renewal, b.leased, b.ping, b.holds = renewal{}, false, nil, 0
	return r, leased, ping, holds
}

// close shuts the mailbox to new mail and returns the holds its unread
// renewals carried.
func (b *mailbox) close() (holds int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	holds, b.holds = b.holds, 0
	b.renewal, b.leased, b.ping = renewal{}, false, nil
	return holds
}
