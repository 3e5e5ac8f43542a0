package gpu

import (
	"context"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/offload"
)

// What woke a GPU actor's loop: the step a helper does for it
// (internal/offload; Run says why).
const (
	stepStart offload.Step = iota
	stepMail
	stepDone
	stepExpiry
	stepVirtualLease
	stepFault
	stepWake
	stepWoke
	// stepStop is no step: the actor's context ended.
	stepStop
)

// steps is an Actor as internal/offload steps it (its Step is not the
// actor's API).
type steps Actor

// Step does s for the actor; stop is set when Run must return err.
func (st *steps) Step(ctx context.Context, s offload.Step) (stop bool, err error) {
	a := (*Actor)(st)
	switch s {
	case stepStart:
		a.start()
	case stepMail:
		if a.mailbox.takeLeaseDue() {
			a.onWallLease()
		}
		a.onNodeMail()
		return a.onMail(ctx)
	case stepDone:
		a.onDone()
	case stepExpiry:
		a.onExpiry()
	case stepVirtualLease:
		a.onVirtualLease()
	case stepFault:
		a.onFaultTimer()
	case stepWake:
		return a.wake(ctx)
	case stepWoke:
		d := a.wallHang
		a.wallHang = 0
		a.wallWoke(d)
	}
	return false, nil
}

// start is the incarnation's first step: it says it is up.
func (a *Actor) start() {
	a.last = a.cfg.Clock.Now()
	a.renewFrom(a.liveNow())
	a.publish(events.GPUUp, events.ChangeUp, "")
	if a.cfg.StartHeld {
		// The restart timer's hold, let go once gpu.up is out.
		a.cfg.StartHeld = false
		a.cfg.Clock.Release()
	}
}

// off does step s on a helper while the actor's goroutine waits; on a
// virtual clock, on the actor's goroutine (offload.Do says why).
func (a *Actor) off(ctx context.Context, s offload.Step) (stop bool, err error) {
	return offload.Do(ctx, (*steps)(a), s, a.virtual)
}
