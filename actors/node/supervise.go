package node

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/gpu"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/simclock"
)

// DefaultRestartBackoff is the first wait before a crashed actor
// restarts; an actor that crashes again within StableRun of its restart
// waits twice as long as the last time, up to MaxRestartBackoff.
const (
	DefaultRestartBackoff = 100 * time.Millisecond
	MaxRestartBackoff     = 5 * time.Second
	StableRun             = 2 * time.Second
)

// NextBackoff is the wait before the next restart: the first backoff again
// after a run of at least StableRun, else double the last (a crash loop).
func NextBackoff(last, first, ran time.Duration) time.Duration {
	if ran >= StableRun || last <= 0 {
		return first
	}
	return min(2*last, MaxRestartBackoff)
}

// slot is one GPU's place on the node: the incarnation of its actor that
// runs now, or nil while the supervisor waits to restart it.
type slot struct {
	id  string
	cur atomic.Pointer[gpu.Actor]
	// restartAt is when a dead actor comes back (unix nanoseconds), for
	// the refusals sent meanwhile.
	restartAt atomic.Int64
}

// supervise runs a GPU's actor and, each time it crashes (killed, or a
// panic), publishes gpu.down for the dead incarnation, waits a backoff and
// starts the next incarnation, empty, keeping only the card's energy meter.
//
//go:noinline
func (h *Host) supervise(ctx context.Context, s *slot) {
	defer h.wg.Done()
	backoff := h.cfg.RestartBackoff
	// The first incarnation is in the slot already (Start put it there
	// before subscribing, so no message finds the GPU missing).
	a := s.cur.Load()
	for a != nil {
		started := h.now()
		err := a.Run(ctx) // a panic comes back as a *gpu.Crash
		if ctx.Err() != nil {
			return
		}
		a = h.restart(ctx, s, a, err, started, &backoff)
	}
}

// restart buries a crashed actor a (gpu.down, its mailbox, its remains),
// waits the backoff and starts the next incarnation from a's
// configuration (nil if ctx ended meanwhile). It is a function of its own so that while an actor
// runs, its goroutine's stack holds only supervise's small frame: an idle
// GPU actor's stack then comes back to 4 KiB (see Actor.Run).
//
//go:noinline
func (h *Host) restart(ctx context.Context, s *slot, a *gpu.Actor, err error, started time.Time, backoff *time.Duration) *gpu.Actor {
	log := h.log.With(zap.String("gpu", s.id))
	s.cur.Store(nil)
	reason := err.Error()
	if c, ok := err.(*gpu.Crash); ok {
		reason = c.Reason
	}
	now := h.now()
	*backoff = NextBackoff(*backoff, h.cfg.RestartBackoff, now.Sub(started))
	s.restartAt.Store(time.Now().Add(*backoff).UnixNano())
	downOK := func() (ok bool) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("the dead actor's remains could not be read", zap.Any("panic", r))
			}
		}()
		a.Down(reason + fmt.Sprintf(" (restarting in %s)", *backoff))
		return true
	}()
	dropped := a.Drain()
	cfg := a.Config()
	cfg.Ended = a.Remains(events.ChangeCrashed)
	log.Warn("GPU actor crashed; supervisor restarts it", zap.String("reason", reason), zap.Duration("backoff", *backoff),
		zap.Int("incarnation", a.Incarnation()+1), zap.Int("messages_dropped", dropped), zap.Bool("down_published", downOK))
	if simclock.IsVirtual(h.cfg.Clock) {
		// On a virtual clock the backoff is simulated time, armed before
		// the crash's hold is let go, and the timer's hold lasts until the
		// next incarnation's gpu.up is out: a death and its restart happen
		// at the same instants in every run of a seed.
		t := h.cfg.Clock.NewTimer(*backoff)
		h.cfg.Clock.Release()
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
			cfg.StartHeld = true
		}
	} else {
		h.cfg.Clock.Release() // (a scaled clock's hold is nothing)
		if !WaitBackoff(ctx, *backoff) {
			return nil
		}
	}
	cfg.Incarnation = a.Incarnation() + 1
	cfg.EnergyJ = a.EnergyJ()
	next := gpu.New(cfg)
	s.cur.Store(next)
	return next
}

// now is the time restarts are measured in: simulated on a virtual clock
// (a backoff there is simulated time), the wall's otherwise.
func (h *Host) now() time.Time {
	if simclock.IsVirtual(h.cfg.Clock) {
		return h.cfg.Clock.Now()
	}
	return time.Now()
}

// WaitBackoff waits d (wall time) before a restart; false if ctx ended first.
func WaitBackoff(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
