package gpu

import (
	"bytes"
	"context"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/simclock"
)

// Liveness time. On a scaled clock a GPU actor's reservations expire, and
// its faults (hangs, partitions, delays, drops) last, in wall time, like
// the leases that find them. On a virtual clock they run in simulated
// time instead, so that the same seed gives the same faults with the same
// outcome: a virtual timer holds the clock when it fires until the actor
// has handled it (liveDone), and a hang parks the actor's mail rather
// than its goroutine, so the clock can move on to the hang's end.

// publishReach makes a virtual hang or partition that begins now known to
// the node's heartbeat (Reachable) before the clock may move on: the
// heartbeat of a later phase of this instant already reports the GPU
// unreachable.
func (a *Actor) publishReach() {
	if !a.virtual {
		return
	}
	now := a.liveNow()
	hung := time.Time{}
	if a.hangEnd != nil {
		hung = a.hangUntil
	}
	if end := now.Add(a.faults.hangFor); a.faults.hangFor > 0 && end.After(hung) {
		hung = end
	}
	if !hung.IsZero() {
		a.hungUntil.Store(hung.UnixNano())
	}
	if !a.faults.cutUntil.IsZero() {
		a.cutUntil.Store(a.faults.cutUntil.UnixNano())
	}
}

// Reachable reports whether, on a virtual clock, the actor answers its
// node at now (simulated time): not hung, not cut off. Safe from any
// goroutine (the node actor's heartbeat).
func (a *Actor) Reachable(now time.Time) bool {
	n := now.UnixNano()
	return n >= a.hungUntil.Load() && n >= a.cutUntil.Load()
}

// JobCount is how many jobs the actor held when it last handled
// something. Safe from any goroutine.
func (a *Actor) JobCount() int { return int(a.jobCount.Load()) }

// liveNow is the actor's liveness time now.
func (a *Actor) liveNow() time.Time {
	if a.virtual {
		return a.cfg.Clock.Now()
	}
	return time.Now()
}

// liveTimer fires after d of liveness time; on a virtual clock its firing
// holds the clock until liveDone.
func (a *Actor) liveTimer(d time.Duration) simclock.Timer {
	if a.virtual {
		return a.cfg.Clock.NewTimer(d)
	}
	return simclock.WallTimer(d)
}

// liveDone lets the clock go after a liveTimer fired and was handled.
func (a *Actor) liveDone() {
	if a.virtual {
		a.cfg.Clock.Release()
	}
}

// startHang hangs the actor for d of simulated time (on a virtual clock):
// from now until it wakes it handles no message (they wait in backlog),
// answers no ping, completes no job and expires no reservation, as a hung
// actor on the wall clock does while its goroutine sleeps.
func (a *Actor) startHang(d time.Duration) {
	a.advance()
	a.logger().Warn("GPU actor hung", zap.Duration("for", d))
	a.hangEnd, a.hangUntil = a.cfg.Clock.NewTimer(d), a.cfg.Clock.Now().Add(d)
}

// wake ends a virtual hang: the jobs resume from where they froze (the
// hung time made no progress), the GPU says it is back, and the mail that
// waited is handled in the order it came, until a staged hang in it hangs
// the actor again. stop is set when Run must return err (a kill in the
// backlog: the hang timer's hold goes to the supervisor with it).
//
//go:noinline
func (a *Actor) wake(ctx context.Context) (stop bool, err error) {
	a.hangEnd = nil
	a.pauseTraining(a.cfg.Clock.Now().Sub(a.last))
	a.last = a.cfg.Clock.Now()
	a.retime = true
	// What the faults had due meanwhile first (a partition that healed
	// during the hang sends what it kept, delayed messages fall due), so
	// that nothing it said before the hang comes after what it says now
	// (seen: a completion kept by a partition came after "woke").
	a.faultTick()
	a.logger().Warn("GPU actor woke from a hang", zap.Int("messages_waiting", len(a.backlog)))
	// Unless its lease ran out meanwhile (then it stops its jobs and
	// rejoins, saying so with gpu.up), it says it is back.
	inc := a.cfg.Incarnation
	a.checkLease()
	if a.cfg.Incarnation == inc {
		a.publish(events.GPUStatusType, events.ChangeWoke, "")
	}
	for len(a.backlog) > 0 && a.hangEnd == nil {
		m := a.backlog[0]
		a.backlog[0] = nil
		a.backlog = a.backlog[1:]
		if stop, err := a.mail(ctx, m, false); stop {
			return true, err
		}
	}
	if len(a.backlog) == 0 {
		a.backlog = nil
	}
	a.rearm()
	a.cfg.Clock.Release()
	return false, nil
}

// isFault says whether m is a kill or chaos control. Such a control is
// taken even while the actor is hung or cut off, and answered straight on
// the bus (answerFault): a fault stands for the environment acting on the
// GPU (a kill -9, a cable pulled), not for a message the GPU reads, and a
// monkey of a virtual run holds the clock until it hears (waiting for the
// hang's end, it held it for its request's wall timeout). A cheap look at
// the bytes first: it runs on every message of a hung or cut-off actor.
func isFault(m *nats.Msg) bool {
	if !bytes.Contains(m.Data, []byte(`"chaos"`)) && !bytes.Contains(m.Data, []byte(`"kill"`)) {
		return false
	}
	var c events.OpRef
	return gojson.Unmarshal(m.Data, &c) == nil && (c.Op == events.OpKill || c.Op == events.OpChaos)
}

// hangLonger makes a virtual hang last at least d from now (a hang
// staged while the actor was hung).
func (a *Actor) hangLonger(d time.Duration) {
	if end := a.cfg.Clock.Now().Add(d); end.After(a.hangUntil) {
		a.hangEnd.Stop()
		a.hangEnd, a.hangUntil = a.cfg.Clock.NewTimer(d), end
	}
}

// answerFault answers a kill or chaos control straight on the bus, past
// the actor's own faults (a delay line, a drop, a partition's outbox):
// whoever injected the fault — on a virtual clock, a monkey holding the
// clock until it hears — learns at once that it bit.
func (a *Actor) answerFault(m *nats.Msg, call string, r events.ControlReply) {
	r.Call = call
	if b, err := gojson.Marshal(r); err == nil && m.Reply != "" {
		if err := a.cfg.Bus.Publish(m.Reply, b); err != nil {
			a.logger().Warn("fault answer not sent", zap.Error(err))
		}
	}
}
