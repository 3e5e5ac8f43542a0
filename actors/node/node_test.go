package node

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/simclock"
	"github.com/gpusched/gpusched/vram"
)

// TestMain fails the tests if a goroutine a host started outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startHost runs one node (8 cores, 16 GiB, one A100) on a real embedded
// server until the test ends, beating every heartbeat.
func startHost(t *testing.T, heartbeat time.Duration) (*nats.Conn, events.Subjects) {
	t.Helper()
	_, nc := testbus.Start(t)
	return nc, startHostOn(t, nc, heartbeat)
}

// startHostOn starts node-0's host on nc (a test that must hear its very
// first heartbeat subscribes before).
func startHostOn(t *testing.T, nc *nats.Conn, heartbeat time.Duration) events.Subjects {
	t.Helper()
	a100, err := model.LookupModel("A100-40GB")
	if err != nil {
		t.Fatal(err)
	}
	subjects := events.NewSubjects("")
	ctx, cancel := context.WithCancel(context.Background())
	h, err := Start(ctx, HostConfig{Spec: model.NodeSpec{ID: "node-0", CPU: 8, Memory: 16 * model.GiB,
		GPUs: []model.GPUSpec{{ID: "gpu-0", Model: a100}}}, VRAMModel: vram.Pooled,
		Clock: simclock.NewScaled(time.Now(), 1), Subjects: subjects, Conn: nc, Heartbeat: heartbeat})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		h.Wait()
	})
	return subjects
}

// control sends one control to the node and returns its answer.
func control(t *testing.T, nc *nats.Conn, subjects events.Subjects, body string) events.ControlReply {
	t.Helper()
	m, err := nc.Request(subjects.NodeCtl("node-0"), []byte(body), 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	var rep events.ControlReply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		t.Fatalf("%s: reply %s: %v", body, m.Data, err)
	}
	return rep
}

// TestNodeHoldsCPUAndMemory: the node actor reserves CPU and memory for
// a job, refuses what would pass its capacity (saying what it holds),
// gives a released job's room back, and answers a malformed control with
// an error naming the field.
func TestNodeHoldsCPUAndMemory(t *testing.T) {
	nc, subjects := startHost(t, 50*time.Millisecond)
	if rep := control(t, nc, subjects, `{"op":"reserve","job_id":"a","cpu":6,"memory":1073741824}`); !rep.OK {
		t.Fatalf("reserve 6 of 8 cores: %+v", rep)
	}
	rep := control(t, nc, subjects, `{"op":"reserve","job_id":"b","cpu":4}`)
	if rep.OK || !strings.Contains(rep.Reason, "insufficient CPU: 2.0 free, asked 4.0") || len(rep.Holds) != 1 || rep.Holds[0].JobID != "a" {
		t.Fatalf("reserve 4 more cores: %+v, want a refusal naming the 2 free and job a's hold", rep)
	}
	if rep := control(t, nc, subjects, `{"op":"reserve","job_id":"c","memory":17179869184}`); rep.OK || !strings.Contains(rep.Reason, "insufficient memory") {
		t.Fatalf("reserve 16 GiB beside 1 GiB held: %+v, want a refusal", rep)
	}
	if rep := control(t, nc, subjects, `{"op":"commit","job_id":"a"}`); !rep.OK {
		t.Fatalf("commit a: %+v", rep)
	}
	if rep := control(t, nc, subjects, `{"op":"commit","job_id":"nobody"}`); rep.OK || !strings.Contains(rep.Reason, "no reservation for nobody") {
		t.Fatalf("commit an unknown job: %+v", rep)
	}
	if rep := control(t, nc, subjects, `{"op":"release","job_id":"a"}`); !rep.OK {
		t.Fatalf("release a: %+v", rep)
	}
	if rep := control(t, nc, subjects, `{"op":"reserve","job_id":"b","cpu":4}`); !rep.OK {
		t.Fatalf("reserve 4 cores once a is released: %+v", rep)
	}
	if rep := control(t, nc, subjects, `{"op":"reserve","job_id":"","cpu":1}`); rep.Error == nil || rep.Error.Field != "job_id" {
		t.Fatalf("a reservation without a job: %+v, want an error naming job_id", rep)
	}
	if rep := control(t, nc, subjects, `{"op":"teleport","job_id":"x"}`); rep.Error == nil || rep.Error.Field != "op" {
		t.Fatalf("an unknown op: %+v, want an error naming op", rep)
	}
}

// TestNodeHeartbeatsItsGPUs: the node beats on its heartbeat subject with
// its capacity, what it holds and its GPU, alive, asking for leases on its
// lease subject.
func TestNodeHeartbeatsItsGPUs(t *testing.T) {
	nc, subjects := startHost(t, 50*time.Millisecond)
	var mu sync.Mutex
	var beats []*nats.Msg
	sub, err := nc.Subscribe(subjects.NodeHeartbeat("node-0"), func(m *nats.Msg) {
		mu.Lock()
		beats = append(beats, m)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if rep := control(t, nc, subjects, `{"op":"reserve","job_id":"a","cpu":3}`); !rep.OK {
		t.Fatalf("reserve: %+v", rep)
	}
	var hb events.NodeHeartbeat
	testbus.WaitFor(t, "a heartbeat with the GPU alive and 3 cores held", 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range beats {
			var ev struct {
				Data events.NodeHeartbeat `json:"data"`
			}
			if json.Unmarshal(m.Data, &ev) == nil && ev.Data.CPUUsed == 3 && len(ev.Data.GPUs) == 1 && ev.Data.GPUs[0].Alive {
				hb = ev.Data
				if m.Reply != subjects.NodeLease("node-0") {
					t.Errorf("heartbeat reply subject %q, want the node's lease subject", m.Reply)
				}
				return true
			}
		}
		return false
	})
	if hb.Node != "node-0" || hb.CPUTotal != 8 || hb.MemoryTotal != int64(16*model.GiB) || hb.GPUs[0].GPU != "gpu-0" || hb.Beat == 0 {
		t.Fatalf("heartbeat %+v", hb)
	}
}

// TestANodeHeartbeatsAtOnceToANewScheduler: a node whose period is an
// hour beats once at its start, and again as soon as a scheduler says
// sched.up (a restart, or a standby taking over), with its GPU alive — so
// a new scheduler learns the cluster without waiting a period.
func TestANodeHeartbeatsAtOnceToANewScheduler(t *testing.T) {
	_, nc := testbus.Start(t)
	subjects := events.NewSubjects("")
	beats := make(chan events.NodeHeartbeat, 8)
	sub, err := nc.Subscribe(subjects.NodeHeartbeat("node-0"), func(m *nats.Msg) {
		var ev struct {
			Data events.NodeHeartbeat `json:"data"`
		}
		if json.Unmarshal(m.Data, &ev) == nil {
			beats <- ev.Data
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	// Subscribed before the node starts: its first beat, at its start,
	// is not missed (under load it could go out before a subscription
	// made after the start reached the server).
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	startHostOn(t, nc, time.Hour)
	next := func(what string) events.NodeHeartbeat {
		t.Helper()
		select {
		case hb := <-beats:
			return hb
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s within 10 s (the period is an hour)", what)
		}
		return events.NodeHeartbeat{}
	}
	first := next("first heartbeat")
	if err := nc.Publish(subjects.SchedEvent(events.SchedUp), []byte(`{"type":"gpusched.sched.up","data":{"incarnation":2}}`)); err != nil {
		t.Fatal(err)
	}
	hb := next("heartbeat after sched.up")
	if hb.Beat != first.Beat+1 || len(hb.GPUs) != 1 || !hb.GPUs[0].Alive {
		t.Fatalf("heartbeat after sched.up: %+v (first was beat %d), want the next beat with the GPU alive", hb, first.Beat)
	}
}
