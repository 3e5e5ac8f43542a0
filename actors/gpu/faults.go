package gpu

import (
	"cmp"
	"context"
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/simclock"
)

// outboxLimit bounds the messages a cut-off actor keeps to send once it is
// back (as a NATS client buffers while reconnecting); past it they are lost.
const outboxLimit = 10000

// outMsg is one outgoing message held back by a fault.
type outMsg struct {
	subject string
	data    []byte
	due     time.Time // wall time it may go (delay)
}

// faults is the chaos one GPU actor suffers: a hang to take, a partition
// (cut off from the bus until cutUntil: incoming messages are lost,
// outgoing ones wait in outbox), a delay line and a drop rate on its
// outgoing messages. Everything is in the actor's liveness time
// (liveNow): the wall's, like leases, on a scaled clock; simulated time
// on a virtual one, so that a seed replays its faults exactly.
type faults struct {
	staged    *events.ChaosControl
	hangFor   time.Duration
	cutUntil  time.Time
	outbox    []outMsg
	delay     time.Duration
	delayEnds time.Time // zero: until cleared
	delayed   []outMsg
	drop      float64
	dropEnds  time.Time // zero: until cleared
	// draws are the drop fault's (nil without one: a GPU pays for them
	// only while it drops).
	draws *dropDraws
	timer simclock.Timer
	// timerFor arms the fault timer in the actor's liveness time
	// (Actor.liveTimer).
	timerFor func(time.Duration) simclock.Timer
	// overflow counts messages lost because the outbox was full (logged
	// when the partition heals).
	overflow int
}

// apply validates a chaos control and stages it; begin makes it bite
// (after the actor's answer has gone out).
func (f *faults) apply(c *events.ChaosControl, now time.Time, gpuID string) *model.FieldError {
	if c == nil {
		return model.Errorf("chaos", "op chaos needs a chaos object")
	}
	switch c.Action {
	case events.ChaosHang, events.ChaosPartition:
		if c.DurationMS <= 0 {
			return model.Errorf("duration", "%s needs a positive duration", c.Action)
		}
	case events.ChaosDelay:
		if c.DelayMS < 0 || c.DurationMS < 0 {
			return model.Errorf("delay", "delay and duration must not be negative")
		}
	case events.ChaosDrop:
		if c.Drop < 0 || c.Drop > 1 || c.DurationMS < 0 {
			return model.Errorf("drop", "drop is a fraction from 0 to 1")
		}
	default:
		return model.Errorf("action", "unknown chaos action %q for a GPU actor", c.Action)
	}
	f.staged = c
	return nil
}

func (f *faults) begin(now time.Time) {
	c := f.staged
	f.staged = nil
	if c == nil {
		return
	}
	d := time.Duration(c.DurationMS) * time.Millisecond
	until := time.Time{}
	if d > 0 {
		until = now.Add(d)
	}
	switch c.Action {
	case events.ChaosHang:
		f.hangFor = d
	case events.ChaosPartition:
		f.cutUntil = until
	case events.ChaosDelay:
		f.delay, f.delayEnds = time.Duration(c.DelayMS)*time.Millisecond, until
	case events.ChaosDrop:
		f.drop, f.dropEnds = c.Drop, until
		// Seeded, so that a chaos run's drops can be replayed.
		f.draws = &dropDraws{seed: c.Seed, drawn: map[string]uint64{}}
	}
	f.arm(now)
}

// takeHang returns a staged hang's duration, once.
func (f *faults) takeHang() time.Duration {
	d := f.hangFor
	f.hangFor = 0
	return d
}

func (f *faults) cutOff(now time.Time) bool { return !f.cutUntil.IsZero() && now.Before(f.cutUntil) }

func (f *faults) delaying(now time.Time) time.Duration {
	if f.delay > 0 && (f.delayEnds.IsZero() || now.Before(f.delayEnds)) {
		return f.delay
	}
	return 0
}

func (f *faults) dropping(now time.Time) bool {
	return f.drop > 0 && f.draws != nil && (f.dropEnds.IsZero() || now.Before(f.dropEnds))
}

// dropDraws are a drop fault's draws. A message's draw is a function of
// the fault's seed, the instant, what the message is (its name) and how
// many messages of that name went at that instant — not of every message
// before it: at one instant the scheduler's controls reach a GPU in an
// order goroutines decide (a restarted scheduler acts on its GPUs'
// answers as they come), and a draw per message in arrival order lost the
// answer to one job's stop in one run of a seed and another job's in the
// next.
type dropDraws struct {
	seed uint64
	// at and drawn count the draws taken at one instant, by name; name
	// is the message being sent (set by the actor: the control an answer
	// answers, the change a status says; "" for its subject).
	at    time.Time
	drawn map[string]uint64
	name  string
}

// naming names the messages sent from now on (Actor.Publish) and returns
// the name before, to restore; nothing without a drop fault.
func (f *faults) naming(name string) string {
	if f.draws == nil {
		return ""
	}
	before := f.draws.name
	f.draws.name = name
	return before
}

// drops says whether the drop fault loses a message to subject sent at
// now (by its name, else its subject: an answer's reply subject carries
// the scheduler's call number, which comes in the same arrival order).
func (f *faults) drops(subject string, now time.Time) bool {
	if !f.dropping(now) {
		return false
	}
	d := f.draws
	what := cmp.Or(d.name, subject)
	if !now.Equal(d.at) {
		d.at = now
		clear(d.drawn)
	}
	n := d.drawn[what]
	d.drawn[what] = n + 1
	h := fnv.New64a()
	h.Write([]byte(what))
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(now.UnixNano()))
	binary.LittleEndian.PutUint64(b[8:], n)
	h.Write(b[:])
	// A PCG stream per message, seeded by the fault's seed and the
	// message's hash: its first number's top 53 bits, a float in [0, 1).
	return float64(rand.NewPCG(d.seed, h.Sum64()).Uint64()>>11)/(1<<53) < f.drop
}

// next is when the faults next need the actor: a partition ending or a
// delayed message falling due (zero: never).
func (f *faults) next() time.Time {
	var t time.Time
	if !f.cutUntil.IsZero() {
		t = f.cutUntil
	}
	if len(f.delayed) > 0 && (t.IsZero() || f.delayed[0].due.Before(t)) {
		t = f.delayed[0].due
	}
	return t
}

func (f *faults) arm(now time.Time) {
	t := f.next()
	if t.IsZero() {
		if f.timer != nil {
			f.timer.Stop()
			f.timer = nil
		}
		return
	}
	if f.timer != nil {
		f.timer.Stop()
	}
	f.timer = f.timerFor(t.Sub(now))
}

func (f *faults) timerC() <-chan time.Time {
	if f.timer == nil {
		return nil
	}
	return f.timer.C()
}

func (f *faults) stop() {
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
}

// Publish is the actor's outgoing path (its emitter and replies use it):
// a drop fault loses the message, a partition keeps it for later, a delay
// holds it in line; otherwise it goes to the bus at once.
func (a *Actor) Publish(subject string, data []byte) error {
	now := a.liveNow()
	f := &a.faults
	if f.drops(subject, now) {
		return nil
	}
	if f.cutOff(now) {
		if len(f.outbox) < outboxLimit {
			f.outbox = append(f.outbox, outMsg{subject: subject, data: data})
		} else {
			f.overflow++
		}
		return nil
	}
	// Once anything waits in the delay line, later messages queue behind
	// it: a delay never reorders an actor's messages.
	if d := f.delaying(now); d > 0 || len(f.delayed) > 0 {
		f.delayed = append(f.delayed, outMsg{subject: subject, data: data, due: now.Add(d)})
		if len(f.delayed) == 1 {
			f.arm(now)
		}
		return nil
	}
	return a.cfg.Bus.Publish(subject, data)
}

// faultTick is the fault timer firing: a partition heals (the actor sends
// what it kept, in order, and a full status so the scheduler can
// reconcile), delayed messages fall due.
func (a *Actor) faultTick() {
	now := a.liveNow()
	f := &a.faults
	if !f.cutUntil.IsZero() && !now.Before(f.cutUntil) {
		f.cutUntil = time.Time{}
		kept := f.outbox
		f.outbox = nil
		a.logger().Warn("partition healed", zap.Int("messages_kept", len(kept)), zap.Int("messages_lost", f.overflow))
		for _, m := range kept {
			a.Publish(m.subject, m.data)
		}
		a.checkLease()
		a.advance()
		a.publish(events.GPUStatusType, events.ChangeRejoined, "")
	}
	for len(f.delayed) > 0 && !now.Before(f.delayed[0].due) {
		m := f.delayed[0]
		f.delayed = f.delayed[1:]
		if err := a.cfg.Bus.Publish(m.subject, m.data); err != nil {
			a.logger().Warn("delayed publish failed", zap.Error(err))
		}
	}
	f.arm(now)
}

// hang freezes the actor for d (wall time): it reads nothing, answers
// nothing, and its GPU runs nothing. It returns false if ctx ended.
func (a *Actor) hang(ctx context.Context, d time.Duration) bool {
	a.advance()
	a.logger().Warn("GPU actor hung", zap.Duration("for", d))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	}
	// A hung GPU made no progress: its jobs resume from where they froze,
	// unless its lease ran out meanwhile (then it stops them and rejoins).
	a.pauseTraining(a.cfg.Clock.Now().Sub(a.last))
	a.last = a.cfg.Clock.Now()
	a.retime = true
	a.logger().Warn("GPU actor woke from a hang", zap.Duration("after", d))
	inc := a.cfg.Incarnation
	a.checkLease()
	if a.cfg.Incarnation == inc {
		// Still leased: it says it is back (a lapsed lease said so with gpu.up).
		a.publish(events.GPUStatusType, events.ChangeWoke, "")
	}
	a.rearm()
	return true
}
