package scheduler

import (
	"time"

	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/simclock"
)

// dues is what the scheduler has due without a message, and when (zero:
// nothing): the core's deadlines as its last step named them (Deadlines:
// the calls, the wake, the leases, the replayed round), the pass while
// the core is dirty, and the periods the shell keeps — the training
// round, the Round in force and, on a virtual clock, the metrics. Run
// arms one timer, at the first of them (first), and steps that one when
// it fires; the rest wait for the next firing. Its order is fixed: two
// things due at one instant and phase are stepped in the order of
// dueOrder, each after the last one's effects, on every run of a seed.
type dues struct {
	at [dueKinds]time.Time
}

// dueKind is one of the things dues holds: its index in dueOrder.
type dueKind int

// The kinds of dues, in the order they are stepped at one instant and
// phase: what timed out (calls, then leases) before what wakes; a round
// before the pass that places after it.
const (
	dueCalls dueKind = iota
	dueLease
	dueWake
	dueRound
	dueReplay
	dueTraining
	duePass
	dueMetrics
	dueKinds
)

// dueOrder is each kind's timer input and the phase of a virtual clock it
// fires in: things that happen (event); decisions over what happened at
// the instant (decide: a replayed or training round, the pass); the
// instant's measurement (observe).
var dueOrder = [dueKinds]struct {
	timer core.Timer
	phase simclock.Phase
}{
	dueCalls:    {core.TimerCalls, simclock.PhaseEvent},
	dueLease:    {core.TimerLease, simclock.PhaseEvent},
	dueWake:     {core.TimerWake, simclock.PhaseEvent},
	dueRound:    {core.TimerRound, simclock.PhaseEvent},
	dueReplay:   {core.TimerReplay, simclock.PhaseDecide},
	dueTraining: {core.TimerTraining, simclock.PhaseDecide},
	duePass:     {core.TimerPass, simclock.PhaseDecide},
	dueMetrics:  {core.TimerMetrics, simclock.PhaseObserve},
}

// first is the kind due first — the earliest instant, then the earliest
// phase, then dueOrder — and when; ok is false when nothing is due.
func (d *dues) first() (kind dueKind, at time.Time, phase simclock.Phase, ok bool) {
	for k := range dueKinds {
		t := d.at[k]
		if t.IsZero() {
			continue
		}
		p := dueOrder[k].phase
		if !ok || t.Before(at) || (t.Equal(at) && p < phase) {
			kind, at, phase, ok = k, t, p, true
		}
	}
	return kind, at, phase, ok
}

// named takes the core's deadlines (Deadlines) and whether it is dirty
// (a pass due now).
func (d *dues) named(due core.Deadlines, dirty bool, now time.Time) {
	d.at[dueCalls], d.at[dueWake], d.at[dueLease], d.at[dueReplay] = due.Calls, due.Wake, due.Lease, due.Replay
	d.at[duePass] = time.Time{}
	if dirty {
		d.at[duePass] = now
	}
}

// unnamed drops the core's deadlines and the pass: a hung or fenced
// scheduler runs none of them (the core names them again when it wakes).
func (d *dues) unnamed() {
	d.at[dueCalls], d.at[dueWake], d.at[dueLease], d.at[dueReplay], d.at[duePass] = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
}
