package gpu

import (
	"sync"

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
	// ping is where the first ping not answered yet wants its answer.
	ping chan<- Liveness
}

func newMailbox() *mailbox { return &mailbox{Queue: queue.New()} }

// renew keeps r unless a renewal of the same incarnation to a later
// deadline is waiting already.
func (b *mailbox) renew(r renewal) {
	b.mu.Lock()
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

// takeNode returns, and clears, the renewal and ping waiting.
func (b *mailbox) takeNode() (r renewal, leased bool, ping chan<- Liveness) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, leased, ping = b.renewal, b.leased, b.ping
	b.renewal, b.leased, b.ping = renewal{}, false, nil
	return r, leased, ping
}
