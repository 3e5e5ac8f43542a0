package scheduler

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/simclock"
)

// TestTheOneTimerTakesWhatIsDueInAFixedOrder: dues names the earliest
// instant first, then the earlier phase at one instant, then dueOrder
// among things due at one instant and phase — the order a run of a seed
// steps them in, whatever order they were named in.
func TestTheOneTimerTakesWhatIsDueInAFixedOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var d dues
	if _, _, _, ok := d.first(); ok {
		t.Fatal("nothing named, yet something is due")
	}
	d.at[dueMetrics] = t0                    // observe phase
	d.at[duePass] = t0                       // decide
	d.at[dueTraining] = t0                   // decide, before the pass
	d.at[dueWake] = t0.Add(time.Second)      // later
	d.at[dueLease] = t0                      // event
	d.at[dueCalls] = t0.Add(2 * time.Second) // later still
	var got []dueKind
	for {
		kind, at, phase, ok := d.first()
		if !ok {
			break
		}
		if phase != dueOrder[kind].phase || !at.Equal(d.at[kind]) {
			t.Fatalf("%d named at %v in phase %d, held at %v in phase %d", kind, at, phase, d.at[kind], dueOrder[kind].phase)
		}
		got = append(got, kind)
		d.at[kind] = time.Time{}
	}
	want := []dueKind{dueLease, dueTraining, duePass, dueMetrics, dueWake, dueCalls}
	if len(got) != len(want) {
		t.Fatalf("stepped %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("stepped %v, want %v", got, want)
		}
	}
	if dueOrder[dueLease].phase != simclock.PhaseEvent || dueOrder[duePass].phase != simclock.PhaseDecide || dueOrder[dueMetrics].phase != simclock.PhaseObserve {
		t.Fatal("a kind in the wrong phase")
	}
}
