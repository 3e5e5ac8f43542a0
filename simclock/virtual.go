package simclock

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Phase orders the timers a virtual clock fires at the same instant: every
// timer of one phase fires, and the simulation settles, before the next
// phase's timers fire. Arrivals and completions come first, the
// scheduler's decision after all of them, and measurements last, so what
// happens at one instant does not depend on which goroutine ran first.
type Phase int

const (
	// PhaseEvent is for things that happen: arrivals, completions, wake-ups.
	PhaseEvent Phase = iota
	// PhaseDecide is for decisions over what happened at the instant.
	PhaseDecide
	// PhaseAfterDecide is for what happens after the instant's decisions
	// although at the same instant: a training job completing at the very
	// start of the interval the decision began completes only if that
	// decision left it running (actors/gpu/training.go).
	PhaseAfterDecide
	// PhaseBeat is for heartbeats: what a node reports of its GPUs is what
	// the instant made of them (a hang or a partition that began at it).
	PhaseBeat
	// PhaseObserve is for measurements of the instant's outcome.
	PhaseObserve
)

// NewPhasedTimer arms a timer in phase on a virtual clock; other clocks
// have no phases and arm a plain timer.
func NewPhasedTimer(c Clock, d time.Duration, phase Phase) Timer {
	if v, ok := c.(*Virtual); ok {
		return v.newTimer(d, phase)
	}
	return c.NewTimer(d)
}

// Rearm makes t (armed on c, nil for none) fire after d from now instead,
// in phase, and returns the timer to wait on. A pending virtual timer is
// moved where it stands, which costs no allocation (a GPU's lease timer is
// re-armed at every heartbeat); any other is stopped and a new one armed.
// Either way it orders among the timers of its instant as a newly armed
// one.
func Rearm(c Clock, t Timer, d time.Duration, phase Phase) Timer {
	if vt, ok := t.(*virtualTimer); ok && vt.reset(d, phase) {
		return vt
	}
	if t != nil {
		t.Stop()
	}
	return NewPhasedTimer(c, d, phase)
}

// IsVirtual reports whether c is a virtual clock.
func IsVirtual(c Clock) bool {
	_, ok := c.(*Virtual)
	return ok
}

// Virtual is a clock that runs as fast as the machine allows: once the
// simulation has settled — no work held (Hold), no message in any watched
// subscription, nothing in flight on any watched connection — it jumps to
// the earliest pending timer and fires it. A seeded run therefore gives the
// same result however fast or loaded the machine is.
//
// Settling is decided by counting, not by waiting: actors Hold before a
// message enters their mailbox and Release after handling it; a fired timer
// is held until its receiver Releases; subscriptions report their pending
// messages; and a barrier (two rounds of NATS flushes on every watched
// connection) brings every published message into some subscription's
// pending count before the counts are read. An activity counter read
// before and after the barrier catches work that started and ended while
// it ran.
type Virtual struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers timerHeap
	// barriers flush connections; pending report undelivered messages.
	barriers []*barrier
	pending  []func() int
	running  bool
	stopped  bool
	// limit, when set, is the latest instant the clock may reach.
	limit time.Time
	// stopWhen is asked at every settled instant whether the run is over.
	stopWhen func() bool
	done     chan struct{}

	held     atomic.Int64
	activity atomic.Uint64
	fired    atomic.Uint64
	// looseArms counts timers armed on a running clock while no work held
	// it (LooseArms).
	looseArms atomic.Uint64
	// flushErrors counts the barriers' flushes that failed (FlushErrors).
	flushErrors atomic.Uint64
	// kick wakes the advancer: a timer was armed, work was released, the
	// clock was started.
	kick chan struct{}
}

// NewVirtual returns a virtual clock at epoch. It does not move until
// Start; Run is its advancing loop.
func NewVirtual(epoch time.Time) *Virtual {
	return &Virtual{now: epoch, kick: make(chan struct{}, 1), done: make(chan struct{})}
}

// Now is the current virtual time.
func (v *Virtual) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

// NewTimer fires after d of virtual time, in PhaseEvent.
func (v *Virtual) NewTimer(d time.Duration) Timer { return v.newTimer(d, PhaseEvent) }

func (v *Virtual) newTimer(d time.Duration, phase Phase) Timer {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seq++
	if v.running && !v.stopped && v.held.Load() == 0 {
		v.looseArms.Add(1)
	}
	t := &virtualTimer{v: v, c: make(chan time.Time, 1), due: v.now.Add(max(d, 0)), phase: phase, seq: v.seq, index: -1}
	heap.Push(&v.timers, t)
	v.wake()
	return t
}

// Hold marks work the simulation must finish before time moves on.
func (v *Virtual) Hold() {
	v.held.Add(1)
	v.activity.Add(1)
}

// Release ends work marked by Hold, or by a timer that fired.
func (v *Virtual) Release() {
	if v.held.Add(-1) == 0 {
		v.wake()
	}
}

// Watch adds a barrier (a flush of a connection) and a pending count (of a
// subscription) to what settling checks; either may be nil. Call it before
// Start.
func (v *Virtual) Watch(flush func() error, pending func() int) {
	v.WatchSent(flush, nil)
	if pending != nil {
		v.mu.Lock()
		v.pending = append(v.pending, pending)
		v.mu.Unlock()
	}
}

// WatchSent adds a barrier (a flush of a connection) with the count of
// messages the connection has published (nil: unknown). A settle flushes
// a connection first only when it has published since its last flush, and
// skips its barriers altogether when none has (see settle).
func (v *Virtual) WatchSent(flush func() error, sent func() uint64) {
	if flush == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.barriers = append(v.barriers, &barrier{flush: flush, sent: sent})
}

// barrier is a watched connection: its flush, its count of messages
// published, and that count when its last flush began (read and written
// by the settling goroutine only).
type barrier struct {
	flush   func() error
	sent    func() uint64
	flushed uint64
}

// Start lets the clock advance (Run waits for it, so that a cluster can
// start up at its epoch).
func (v *Virtual) Start() {
	v.mu.Lock()
	v.running = true
	v.mu.Unlock()
	v.wake()
}

// StopAt makes the clock stop rather than pass t.
func (v *Virtual) StopAt(t time.Time) {
	v.mu.Lock()
	v.limit = t
	v.mu.Unlock()
}

// StopWhen makes the clock stop at the first settled instant at which done
// reports true. done runs on the advancing goroutine while nothing else in
// the simulation moves; it may read the clock.
func (v *Virtual) StopWhen(done func() bool) {
	v.mu.Lock()
	v.stopWhen = done
	v.mu.Unlock()
}

// Stop stops the clock where it is.
func (v *Virtual) Stop() {
	v.mu.Lock()
	v.stopped = true
	v.mu.Unlock()
	v.wake()
}

// Done closes when the clock has stopped for good (Stop, StopAt, StopWhen
// or the end of Run's context).
func (v *Virtual) Done() <-chan struct{} { return v.done }

// Fired is the number of timers fired so far (a measure of progress).
func (v *Virtual) Fired() uint64 { return v.fired.Load() }

// LooseArms is the number of timers armed on the running clock while no
// work held it. Whoever arms a timer in answer to a message or to another
// timer must do so before it releases that work: once nothing holds the
// clock it may move on, so a timer armed after the release starts from
// whichever instant the clock had reached by then — a run that depends on
// goroutine timing. A deterministic run has none (its tests check), though
// one loose arm need not have been late: the clock may not have moved.
func (v *Virtual) LooseArms() uint64 { return v.looseArms.Load() }

// FlushErrors counts the flushes of watched connections that failed while
// the clock settled an instant. Each failure kept the clock at its instant
// and flushed again: a flush that timed out does not show that what its
// connection published has been delivered, and moving on could leave a
// message in flight across instants.
func (v *Virtual) FlushErrors() uint64 { return v.flushErrors.Load() }

func (v *Virtual) wake() {
	select {
	case v.kick <- struct{}{}:
	default:
	}
}

// settlePoll is how often the advancer looks again while it waits for
// held work or for timers, in case a wake-up raced with its check; wake-ups
// normally come at once through kick.
const settlePoll = 20 * time.Millisecond

func (v *Virtual) wait(ctx context.Context) bool {
	t := time.NewTimer(settlePoll)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-v.kick:
	case <-t.C:
	}
	return true
}

// Run advances the clock until it stops or ctx ends.
func (v *Virtual) Run(ctx context.Context) {
	defer close(v.done)
	var flushers flushPool
	defer flushers.stop()
	for {
		v.mu.Lock()
		running, stopped := v.running, v.stopped
		v.mu.Unlock()
		if stopped {
			return
		}
		if !running {
			if !v.wait(ctx) {
				return
			}
			continue
		}
		if !v.settle(ctx, &flushers) {
			return
		}
		v.mu.Lock()
		stopWhen := v.stopWhen
		v.mu.Unlock()
		// Asked without the lock, so that it may read the clock.
		done := stopWhen != nil && stopWhen()
		v.mu.Lock()
		if v.stopped || done {
			v.stopped = true
			v.mu.Unlock()
			return
		}
		if v.timers.Len() == 0 && !v.limit.IsZero() {
			// Nothing is due and nothing is moving: nothing can happen
			// before the limit but a message from outside, which a run
			// with a limit does not wait for.
			v.now = v.limit
			v.stopped = true
			v.mu.Unlock()
			return
		}
		if v.timers.Len() == 0 {
			v.mu.Unlock()
			if !v.wait(ctx) {
				return
			}
			continue
		}
		first := v.timers[0]
		if !v.limit.IsZero() && first.due.After(v.limit) {
			v.now = v.limit
			v.stopped = true
			v.mu.Unlock()
			return
		}
		if first.due.After(v.now) {
			v.now = first.due
		}
		// Fire every timer due now in the first phase due now, together.
		for v.timers.Len() > 0 && !v.timers[0].due.After(v.now) && v.timers[0].phase == first.phase {
			t := heap.Pop(&v.timers).(*virtualTimer)
			t.fired = true
			v.Hold()
			v.fired.Add(1)
			t.c <- v.now
		}
		v.mu.Unlock()
	}
}

// settle returns once the simulation has settled (or false when ctx ends).
func (v *Virtual) settle(ctx context.Context, flushers *flushPool) bool {
	skipped := false // the flushes were skipped once already
	for {
		for v.held.Load() != 0 {
			if !v.wait(ctx) {
				return false
			}
		}
		before := v.activity.Load()
		v.mu.Lock()
		barriers, pending := v.barriers, v.pending
		v.mu.Unlock()
		// Two rounds: the first brings every message a connection
		// published into the server and out to its subscribers'
		// connections; the second brings those into the subscribers'
		// pending counts. The first needs only the connections that
		// published since their last flush (a flush sends a connection's
		// buffered messages, then a ping the server answers after routing
		// them; a message counted before the count is read is in the
		// buffer before that ping). When none did, every message was
		// routed by an earlier first round and delivered by the second
		// round after it, so neither round is needed (the flushes are a
		// large share of a simulation's CPU on the clock's side).
		// A settle not quiet without them flushes every connection twice:
		// what it waits for is then work in progress, and the flushes
		// pace the loop (without them it would spin).
		first := v.publishedSince(barriers)
		if len(first) == 0 && !skipped {
			skipped = true
		} else {
			all := allFlushes(barriers)
			if len(first) == 0 {
				first = all
			}
			// A flush that failed (timed out) proves nothing of what its
			// connection had in flight: the settle is not quiet, and
			// flushes again.
			failed := flushers.flushAll(first)
			failed += flushers.flushAll(all)
			if failed > 0 {
				v.flushErrors.Add(uint64(failed))
				if ctx.Err() != nil {
					return false
				}
				// The failed barriers' counts are noted as flushed
				// already (publishedSince): the next round must flush
				// every connection, not skip them as quiet.
				skipped = true
				continue
			}
		}
		quiet := v.held.Load() == 0 && v.activity.Load() == before
		for _, p := range pending {
			if !quiet {
				break
			}
			quiet = p() == 0
		}
		if quiet && v.activity.Load() == before {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
	}
}

// publishedSince is the flushes of the barriers whose connections
// published since their last flush (every one whose count is unknown),
// each noted as flushed at its count now.
func (v *Virtual) publishedSince(barriers []*barrier) []func() error {
	var first []func() error
	for _, b := range barriers {
		if b.sent == nil {
			first = append(first, b.flush)
			continue
		}
		if n := b.sent(); n != b.flushed {
			b.flushed = n
			first = append(first, b.flush)
		}
	}
	return first
}

// allFlushes is every barrier's flush.
func allFlushes(barriers []*barrier) []func() error {
	all := make([]func() error, len(barriers))
	for i, b := range barriers {
		all[i] = b.flush
	}
	return all
}

// flushPool runs a settle's barriers at once, each on a goroutine that
// lives as long as the clock runs, instead of one started per barrier per
// round (two rounds an instant): a profile of 16 simtest seeds spent 13 %
// of its CPU in runtime.newstack, which such short-lived goroutines growing
// their stacks would explain (by reading; with the pool the same seeds ran
// 5–13 % faster, two runs each).
type flushPool struct {
	reqs   []chan func() error
	wg     sync.WaitGroup
	failed atomic.Int64 // the barriers of this flushAll that failed
}

// flushAll runs barriers at once and returns how many failed.
func (p *flushPool) flushAll(barriers []func() error) int {
	if len(barriers) == 1 {
		if barriers[0]() != nil {
			return 1
		}
		return 0
	}
	for len(p.reqs) < len(barriers) {
		ch := make(chan func() error)
		p.reqs = append(p.reqs, ch)
		go func() {
			for b := range ch {
				if b() != nil {
					p.failed.Add(1)
				}
				p.wg.Done()
			}
		}()
	}
	p.failed.Store(0)
	p.wg.Add(len(barriers))
	for i, b := range barriers {
		p.reqs[i] <- b
	}
	p.wg.Wait()
	return int(p.failed.Load())
}

// stop ends the pool's goroutines.
func (p *flushPool) stop() {
	for _, ch := range p.reqs {
		close(ch)
	}
	p.reqs = nil
}

type virtualTimer struct {
	v     *Virtual
	c     chan time.Time
	due   time.Time
	phase Phase
	seq   uint64
	index int
	fired bool
}

func (t *virtualTimer) C() <-chan time.Time { return t.c }

// reset moves a pending timer to d from now in phase; it reports false
// for one that fired already.
func (t *virtualTimer) reset(d time.Duration, phase Phase) bool {
	v := t.v
	v.mu.Lock()
	defer v.mu.Unlock()
	if t.fired || t.index < 0 {
		return false
	}
	v.seq++
	if v.running && !v.stopped && v.held.Load() == 0 {
		v.looseArms.Add(1)
	}
	t.due, t.phase, t.seq = v.now.Add(max(d, 0)), phase, v.seq
	heap.Fix(&v.timers, t.index)
	v.wake()
	return true
}

// Stop cancels a pending timer. A timer that fired but whose time its
// owner has not yet received is drained, and its hold released, so that
// the owner may re-arm without handling it.
func (t *virtualTimer) Stop() bool {
	t.v.mu.Lock()
	defer t.v.mu.Unlock()
	if !t.fired {
		if t.index >= 0 {
			heap.Remove(&t.v.timers, t.index)
		}
		return true
	}
	select {
	case <-t.c:
		if t.v.held.Add(-1) == 0 {
			t.v.wake()
		}
	default:
	}
	return false
}

// timerHeap orders timers by due time, then phase, then arming order.
type timerHeap []*virtualTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if !a.due.Equal(b.due) {
		return a.due.Before(b.due)
	}
	if a.phase != b.phase {
		return a.phase < b.phase
	}
	return a.seq < b.seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*virtualTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
