package gpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpusched/gpusched/events"
)

// TestADropFaultDropsTheSameMessagesInAnyOrder: a drop fault's draw for a
// message depends on the message (its name) and the instant, not on the
// messages before it. Forty answers sent at one instant, in two orders,
// by two GPUs under the same fault: each answer is dropped by both or by
// neither. Before, each message took the next number of one seeded
// stream, so the order the scheduler's controls came in (goroutine order
// at one instant) decided which answer was lost.
func TestADropFaultDropsTheSameMessagesInAnyOrder(t *testing.T) {
	now := time.Unix(3600, 0)
	names := make([]string, 40)
	for i := range names {
		names[i] = fmt.Sprintf("answer release job-%d", i)
	}
	dropped := func(order []string) map[string]bool {
		var f faults
		if fe := f.apply(&events.ChaosControl{Action: events.ChaosDrop, Drop: 0.5, Seed: 7}, now, "gpu-0"); fe != nil {
			t.Fatal(fe)
		}
		f.begin(now)
		out := map[string]bool{}
		for _, name := range order {
			f.naming(name)
			out[name] = f.drops("_INBOX.sched.1", now)
		}
		return out
	}
	reversed := make([]string, len(names))
	for i, n := range names {
		reversed[len(names)-1-i] = n
	}
	shuffled := append([]string(nil), names...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	first := dropped(names)
	lost := 0
	for _, order := range [][]string{reversed, shuffled} {
		again := dropped(order)
		for _, n := range names {
			if again[n] != first[n] {
				t.Fatalf("%s: dropped %v in one order, %v in another", n, first[n], again[n])
			}
		}
	}
	for _, n := range names {
		if first[n] {
			lost++
		}
	}
	if lost < 8 || lost > 32 {
		t.Fatalf("%d of 40 answers dropped at a drop rate of one half", lost)
	}
}
