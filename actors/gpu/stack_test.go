package gpu_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/actors/node"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/simclock"
)

// TestAnIdleGPUActorKeepsTheSmallestStack: GPU actors that have said they
// are up, hold a lease and answered a describe, then wait, keep their
// goroutines on the runtime's first 2 KiB of stack: their work ran on
// helpers (internal/offload). Run on the actor's own goroutine, the same
// work leaves each on 4 KiB or more for good.
func TestAnIdleGPUActorKeepsTheSmallestStack(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector doubles the stack guard: no goroutine that parks fits 2 KiB")
	}
	const gpus = 2000 // on each of two nodes
	_, nc := testbus.Start(t)
	m, err := model.LookupModel("A100-80GB")
	if err != nil {
		t.Fatal(err)
	}
	ups := make(chan struct{}, gpus)
	sub, err := nc.Subscribe("gpusched.evt.gpu.*.*."+events.GPUUp, func(*nats.Msg) { ups <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	nc.Flush()
	ctx, cancel := context.WithCancel(context.Background())
	var hosts []*node.Host
	defer func() {
		cancel()
		for _, h := range hosts {
			h.Wait()
		}
	}()
	// warm starts a node of gpus GPUs and has each say it is up and
	// answer a describe.
	warm := func(n string) {
		spec := model.NodeSpec{ID: n, CPU: 16, Memory: 128 * model.GiB}
		for i := range gpus {
			spec.GPUs = append(spec.GPUs, model.GPUSpec{ID: fmt.Sprintf("gpu-%d", i), Model: m})
		}
		h, err := node.Start(ctx, node.HostConfig{Spec: spec, Clock: simclock.NewScaled(time.Unix(0, 0), 1),
			Subjects: events.NewSubjects(""), Conn: nc, Lease: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
		deadline := time.After(30 * time.Second)
		for range gpus {
			select {
			case <-ups:
			case <-deadline:
				t.Fatalf("not every GPU of %s said it was up within 30 s", n)
			}
		}
		describe, _ := json.Marshal(events.Control{Op: events.OpDescribe})
		for i := range gpus {
			if _, err := nc.Request(fmt.Sprintf("gpusched.gpu.%s.gpu-%d.ctl", n, i), describe, 10*time.Second); err != nil {
				t.Fatalf("describe %s/gpu-%d: %v", n, i, err)
			}
		}
	}
	stacks := func() int64 {
		runtime.GC()
		runtime.GC() // the first may leave stacks to shrink at the next
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.StackInuse)
	}
	// The first node brings up the helpers and the bus's goroutines; the
	// second's stacks are its actors' alone.
	warm("node-0")
	before := stacks()
	warm("node-1")
	perGPU := (stacks() - before) / gpus
	t.Logf("stack per GPU actor: %d bytes", perGPU)
	// 2 KiB each, and the node actor's spread over 2,000 GPUs; a
	// goroutine that did its own work holds 4 KiB or more.
	if perGPU >= 3<<10 {
		t.Fatalf("idle GPU actors hold %d bytes of stack each; want the runtime's first 2 KiB", perGPU)
	}
}
