package node

import (
	"context"

	"github.com/gpusched/gpusched/actors/gpu"
	"github.com/gpusched/gpusched/internal/offload"
	"github.com/gpusched/gpusched/simclock"
)

// What woke a node actor's loop: the step a helper does for it.
const (
	stepStart offload.Step = iota
	stepMail
	stepAlive
	stepBeat
	stepAnnounce
	stepFirst
	stepTick
)

// steps is an Actor as internal/offload steps it (its Step is not the
// actor's API).
type steps Actor

// off does step s on a helper while the actor's goroutine waits; on a
// virtual clock, on the actor's goroutine (offload.Do says why).
func (a *Actor) off(ctx context.Context, s offload.Step) {
	offload.Do(ctx, (*steps)(a), s, a.virtual)
}

// Step does s for the node actor (it never stops the loop).
func (st *steps) Step(_ context.Context, s offload.Step) (bool, error) {
	a := (*Actor)(st)
	switch s {
	case stepStart:
		a.start()
	case stepMail:
		if m, ok := a.mailbox.Take(); ok {
			a.handle(m)
			a.clock.Release()
		}
	case stepAlive:
		a.onAnswer(a.answered)
	case stepBeat:
		a.publishHeartbeat(a.reachable())
		a.beatTimer = simclock.NewPhasedTimer(a.clock, a.heartbeat, simclock.PhaseBeat)
		a.clock.Release()
	case stepAnnounce:
		a.onAnnounce()
	case stepFirst:
		if (!a.firstSent || a.early) && !a.virtual {
			a.firstSent, a.early = true, false
			a.publishHeartbeat(a.heard)
		}
	case stepTick:
		a.onTick()
	}
	return false, nil
}

// start pings the GPUs and arms the loop's timers. The first heartbeat
// goes out as soon as every GPU has answered its first ping (or after
// firstHeartbeat at the latest), so a scheduler learns the node's
// resources at once and no GPU that is merely starting is reported not
// alive (it would then wait a whole period).
//
// On a virtual clock a node sends its first heartbeat once every GPU has
// answered (re-pinged each wall period until then; there is no deadline,
// the clock does not move before the scheduler has heard from every GPU),
// then one every heartbeat period of simulated time, in the instant's
// PhaseBeat. Those say what each GPU actor is at that instant (Reachable:
// not hung, not cut off; its jobs) rather than what answered a ping: pings
// are answered at wall-time moments, and a run's heartbeats would then
// depend on how fast the machine is (two runs of one seed differed by a
// round of heartbeats when the periodic ones came from a wall ticker).
// Periodic ones only when the GPUs hold leases (a virtual run with
// faults): without, a beat renews nothing, and a node beating every few
// simulated minutes costs a long trace millions of messages (openb's 1,213
// nodes over 120 days: 52 M heartbeats).
func (a *Actor) start() {
	a.tick = simclock.WallTicker(a.heartbeat)
	a.heard = map[string]gpu.Liveness{}
	a.ping()
	a.first = simclock.WallTimer(firstHeartbeat)
	if len(a.gpus) == 0 {
		a.firstSent = true
		a.publishHeartbeat(a.heard)
	}
}

// onAnswer takes a GPU's answer to a ping; the first heartbeat (or an
// early one) goes out once every GPU has answered.
func (a *Actor) onAnswer(l gpu.Liveness) {
	a.heard[l.GPU] = l
	if (!a.firstSent || a.early) && len(a.heard) == len(a.gpus) {
		a.firstSent, a.early = true, false
		a.stopFirst()
		a.publishHeartbeat(a.heard)
		if a.virtual && a.leased {
			a.beatTimer = simclock.NewPhasedTimer(a.clock, a.heartbeat, simclock.PhaseBeat)
		}
	}
}

// onAnnounce is Host.Announce's request for a heartbeat now.
func (a *Actor) onAnnounce() {
	if a.virtual {
		a.publishHeartbeat(a.current())
	} else if !a.early {
		// A new scheduler: every GPU is asked now, and the beat goes out as
		// a first one does (once all have answered, or at firstHeartbeat
		// with those that did), a period sooner than the next tick.
		a.early = true
		a.stopFirst()
		a.first = simclock.WallTimer(firstHeartbeat)
		a.ping()
	}
	a.clock.Release()
}

// onTick is the wall period: on a scaled clock the heartbeat with what
// answered the last ping, and the next ping; on a virtual one a ping for
// the GPUs not up at the first.
func (a *Actor) onTick() {
	if a.virtual {
		if !a.firstSent {
			a.ping() // a GPU that was not up at the first ping
		}
		return
	}
	a.expire()
	a.publishHeartbeat(a.heard)
	a.heard = map[string]gpu.Liveness{}
	a.ping()
}

func (a *Actor) stopFirst() {
	if a.first != nil {
		a.first.Stop()
		a.first = nil
	}
}

// stopTimers stops the loop's timers when it ends.
func (a *Actor) stopTimers() {
	if a.tick != nil {
		a.tick.Stop()
	}
	a.stopFirst()
	if a.beatTimer != nil {
		a.beatTimer.Stop()
	}
}
