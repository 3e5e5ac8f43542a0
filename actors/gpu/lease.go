package gpu

import (
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/simclock"
	"github.com/gpusched/gpusched/vram"
)

// fenceMargin is the part of the lease an actor gives back: it stops its
// own jobs a fifth of the lease before the lease ends, so that it has
// surely stopped before the scheduler (whose lease counts from when it
// received the heartbeat, later than the node sent it) can declare it dead
// and run its jobs elsewhere.
func (a *Actor) fenceMargin() time.Duration { return a.cfg.Lease / 5 }

// renewFrom starts a lease at sent (the actor's own start: the scheduler
// counts its lease from when it hears the actor's gpu.up, later).
func (a *Actor) renewFrom(sent time.Time) {
	if a.cfg.Lease > 0 {
		a.renew(sent.Add(a.cfg.Lease))
	}
}

// renew moves the actor's fence deadline to until minus the margin, if
// that is later than the deadline it has.
func (a *Actor) renew(until time.Time) {
	if a.cfg.Lease <= 0 {
		return
	}
	deadline := until.Add(-a.fenceMargin())
	if !deadline.After(a.leaseUntil) {
		return
	}
	a.leaseUntil = deadline
	a.armLease()
}

// armLease arms the lease's timer at its deadline: a wall timer on a
// scaled clock, a virtual one (simulated time) on a virtual clock.
func (a *Actor) armLease() {
	if a.virtual {
		a.leaseVTimer = simclock.Rearm(a.cfg.Clock, a.leaseVTimer, a.leaseUntil.Sub(a.liveNow()), simclock.PhaseEvent)
		return
	}
	if a.leaseTimer == nil {
		a.leaseTimer = time.NewTimer(time.Until(a.leaseUntil))
	} else {
		a.leaseTimer.Reset(time.Until(a.leaseUntil))
	}
}

// onVirtualLease is the lease's virtual timer firing. A renewal holds the
// clock until the actor has read it, so none should be waiting; one is
// taken first all the same, so that the verdict could not depend on which
// the actor saw first. A hung actor does nothing until it wakes (wake
// checks the lease), as a hung process does.
//
//go:noinline
func (a *Actor) onVirtualLease() {
	a.leaseVTimer = nil
	if a.hangEnd == nil {
		a.onNodeMail()
		a.checkLease()
	}
	a.liveDone()
}

// leased reports whether the actor holds a lease now (always, without one).
func (a *Actor) leased() bool {
	return a.cfg.Lease <= 0 || a.liveNow().Before(a.leaseUntil)
}

// fenceIfLapsed acts on a lapsed lease before anything else the actor
// was woken for: it must not act in an incarnation past its lease.
func (a *Actor) fenceIfLapsed() {
	if !a.leased() {
		a.fence()
	}
}

// checkLease fences the actor if its lease has run out.
func (a *Actor) checkLease() {
	if a.leased() {
		if a.cfg.Lease > 0 && a.leaseTimer == nil && a.leaseVTimer == nil {
			a.armLease()
		}
		return
	}
	a.fence()
}

// fence is what an actor does when its lease runs out: the scheduler will
// declare this incarnation dead and run its jobs elsewhere, so it stops
// them first (their progress so far is remembered as "fenced"), drops its
// reservations, and rejoins as its next incarnation with what it really
// has: nothing. Its messages from the old incarnation are stale from now on.
// Every lapse ends an incarnation, even one with nothing to stop: the
// scheduler may have declared it dead, and it must never speak again. The
// new incarnation's lease counts from now (the scheduler's from when it
// hears the gpu.up, later), so a long partition ends one empty
// incarnation per lease.
func (a *Actor) fence() {
	a.advance()
	n := 0
	for _, id := range a.sortedIDs() {
		// Only running jobs ran here; a reservation never committed is
		// remembered as expired: the scheduler that placed it may have
		// died believing it runs (commits are not awaited).
		if s := a.shares[id]; s.running {
			n++
			a.remember(id, events.ChangeFenced, s.progress)
		} else {
			a.remember(id, events.ChangeExpired, s.job.ProgressS)
		}
	}
	a.logger().Warn("lease expired: stopping own jobs and rejoining", zap.Int("jobs_stopped", n),
		zap.Int("incarnation", a.cfg.Incarnation+1), zap.Time("lease_until", a.leaseUntil))
	if a.done != nil {
		(*a.done).Stop()
		a.done = nil
	}
	if a.expiry != nil {
		a.expiry.Stop()
		a.expiry = nil
	}
	a.shares = map[string]*share{}
	a.layout = vram.New(int64(a.cfg.Model.VRAM), a.cfg.VRAMModel)
	a.version, a.retime = 0, false
	a.cfg.Incarnation++
	a.inc.Store(int64(a.cfg.Incarnation))
	a.emit = events.NewEmitter(a, a.source())
	a.renewFrom(a.liveNow())
	st := a.status(events.ChangeRejoined, "")
	st.Reason = "lease expired: stopped " + strconv.Itoa(n) + " running jobs itself and rejoined empty"
	if err := a.emit.Emit(a.cfg.Subjects.GPUEvent(a.cfg.Node, a.cfg.ID, events.GPUUp), events.Type("gpu", events.GPUUp),
		a.cfg.ID, a.cfg.Clock.Now(), st); err != nil {
		a.logger().Warn("publish failed", zap.String("type", events.GPUUp), zap.Error(err))
	}
}
