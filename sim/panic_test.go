package sim

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
)

// panicsOnce is binpack whose first score panics: a bug in a policy, met
// inside a scheduling pass (outside any message's own recovery).
type panicsOnce struct {
	policy.GPURanker
	fired atomic.Bool
}

func (p *panicsOnce) Name() string { return "test-panics-once" }

func (p *panicsOnce) Score(c *policy.Cluster, g *policy.GPU) float64 {
	if p.fired.CompareAndSwap(false, true) {
		panic("a policy's bug")
	}
	return p.GPURanker.Score(c, g)
}

var registerPanicsOnce sync.Once

// TestASchedulerThatPanicsOnAVirtualClockIsRestartedAndTheRunGoesOn: the
// scheduler panics in a pass on a virtual clock; its supervisor restarts
// it and the run ends. Before, the pass's hold on the clock died with the
// scheduler and the supervisor took one more: the clock never moved
// again, and the run never ended (simtest seed 148, with a bug of a
// version never landed).
func TestASchedulerThatPanicsOnAVirtualClockIsRestartedAndTheRunGoesOn(t *testing.T) {
	registerPanicsOnce.Do(func() {
		bp, err := policy.Lookup[policy.Policy]("binpack")
		if err != nil {
			t.Fatal(err)
		}
		policy.Register[policy.Policy](&panicsOnce{GPURanker: bp.(policy.GPURanker)})
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Shape: referenceShape(t), Policy: "test-panics-once", Seed: 3, Rate: 6, Hours: 2, Drain: 24 * time.Hour,
		Interference: model.DefaultInterference})
	if err != nil {
		t.Fatalf("the run: %v (a stalled clock ends it at the test's deadline)", err)
	}
	if res.Final.Incarnation < 2 {
		t.Fatalf("the scheduler is at incarnation %d: the panic did not restart it", res.Final.Incarnation)
	}
	if res.Submitted == 0 {
		t.Fatal("no job submitted")
	}
}
