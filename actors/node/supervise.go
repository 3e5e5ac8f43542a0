package node

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/gpu"
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
func (h *Host) supervise(ctx context.Context, s *slot, cfg gpu.Config) {
	log := h.log.With(zap.String("gpu", s.id))
	backoff := h.cfg.RestartBackoff
	// The first incarnation is in the slot already (Start put it there
	// before subscribing, so no message finds the GPU missing).
	a := s.cur.Load()
	for {
		if a == nil {
			a = gpu.New(cfg)
			s.cur.Store(a)
		}
		started := time.Now()
		err := runCaught(ctx, a)
		if ctx.Err() != nil {
			return
		}
		s.cur.Store(nil)
		reason := err.Error()
		if c, ok := err.(*gpu.Crash); ok {
			reason = c.Reason
		}
		now := time.Now()
		backoff = NextBackoff(backoff, h.cfg.RestartBackoff, now.Sub(started))
		s.restartAt.Store(now.Add(backoff).UnixNano())
		downOK := func() (ok bool) {
			defer func() {
				if r := recover(); r != nil {
					log.Error("the dead actor's remains could not be read", zap.Any("panic", r))
				}
			}()
			a.Down(reason + fmt.Sprintf(" (restarting in %s)", backoff))
			return true
		}()
		dropped := a.Drain()
		cfg.Ended = a.Remains("crashed")
		log.Warn("GPU actor crashed; supervisor restarts it", zap.String("reason", reason), zap.Duration("backoff", backoff),
			zap.Int("incarnation", a.Incarnation()+1), zap.Int("messages_dropped", dropped), zap.Bool("down_published", downOK))
		if !WaitBackoff(ctx, backoff) {
			return
		}
		cfg.Incarnation = a.Incarnation() + 1
		cfg.EnergyJ = a.EnergyJ()
		a = nil
	}
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

// runCaught runs the actor, turning a panic into a crash.
func runCaught(ctx context.Context, a *gpu.Actor) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &gpu.Crash{Reason: fmt.Sprintf("panic: %v", r)}
		}
	}()
	return a.Run(ctx)
}
