package node

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/simclock"
)

// TestAnIdleNodeActorKeepsTheSmallestStack: node actors (no GPUs, one
// Router for all) that have heartbeaten and answered a reservation, then
// wait, keep their goroutines on the runtime's first 2 KiB of stack: their
// work ran on helpers (internal/offload). Run on the actor's own
// goroutine, the same work leaves each on 4 KiB or more.
func TestAnIdleNodeActorKeepsTheSmallestStack(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector doubles the stack guard: no goroutine that parks fits 2 KiB")
	}
	const nodes = 1000 // twice
	_, nc := testbus.Start(t)
	subjects := events.NewSubjects("")
	heard := make(chan string, nodes)
	sub, err := nc.Subscribe(subjects.NodeHeartbeat("*"), func(m *nats.Msg) { heard <- m.Subject })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	router, err := NewRouter(nc, subjects)
	if err != nil {
		t.Fatal(err)
	}
	defer router.Close()
	nc.Flush()

	stacks := func() int64 {
		runtime.GC()
		runtime.GC() // the first may leave stacks to shrink at the next
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.StackInuse)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var hosts []*Host
	defer func() {
		cancel()
		for _, h := range hosts {
			h.Wait()
		}
	}()
	// warm starts nodes [from, from+nodes), waits for each one's first
	// heartbeat, and has each take a reservation, one at a time.
	warm := func(from int) {
		for i := from; i < from+nodes; i++ {
			h, err := Start(ctx, HostConfig{Spec: model.NodeSpec{ID: fmt.Sprintf("node-%d", i), CPU: 8, Memory: 16 * model.GiB},
				Clock: simclock.NewScaled(time.Now(), 1), Subjects: subjects, Conn: nc, Router: router})
			if err != nil {
				t.Fatal(err)
			}
			hosts = append(hosts, h)
		}
		deadline := time.After(30 * time.Second)
		for range nodes {
			select {
			case <-heard:
			case <-deadline:
				t.Fatal("not every node heartbeat within 30 s")
			}
		}
		reserve, _ := json.Marshal(events.Control{Op: events.OpReserve, JobID: "job-1", CPU: 1, Memory: int64(model.GiB)})
		for i := from; i < from+nodes; i++ {
			msg, err := nc.Request(subjects.NodeCtl(fmt.Sprintf("node-%d", i)), reserve, 10*time.Second)
			if err != nil {
				t.Fatalf("reserve on node-%d: %v", i, err)
			}
			var r events.ControlReply
			if err := json.Unmarshal(msg.Data, &r); err != nil || !r.OK {
				t.Fatalf("reserve on node-%d: %s", i, msg.Data)
			}
		}
	}
	// The first nodes bring up the helpers and the bus's goroutines; the
	// second's stacks are their actors' alone.
	warm(0)
	before := stacks()
	warm(nodes)
	perNode := (stacks() - before) / nodes
	t.Logf("stack per node actor: %d bytes", perNode)
	// 2 KiB each; a goroutine that did its own work holds 8 KiB.
	if perNode >= 3<<10 {
		t.Fatalf("idle node actors hold %d bytes of stack each; want the runtime's first 2 KiB", perNode)
	}
}
