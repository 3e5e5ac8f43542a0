package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/node"
	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/livetest"
	"github.com/gpusched/gpusched/model"
)

// TestANodeFloodingItsEventsIsCutOff (issue 22 item 6, per-node event
// budgets): a node that publishes more events than its budget is shut out
// before it can evict the history the others wrote. The cost falls on it:
// its GPU is declared down by the lease and its job re-queued; it is let
// back after the cool-off, rejoins, and the job runs on it again. The rest
// of the cluster works throughout. Without the budget keeper the flood
// below (160 MiB into a 64 MiB stream) evicts the cluster's first events.
func TestANodeFloodingItsEventsIsCutOff(t *testing.T) {
	const lease = 2 * time.Second
	budget := auth.EventBudget{Rate: 64 * model.KiB, Burst: 2 * model.MiB, CoolOff: 3 * lease}
	s := livetest.SecureCluster(t, cluster.Config{
		Access:     cluster.Access{NodeEventBudget: budget},
		Hardware:   cluster.Hardware{Lease: lease},
		Durability: cluster.Durability{Store: durable.Memory, Durable: durable.Options{EventsMaxBytes: 64 << 20}},
	})
	admin := s.As(t, "admin")
	security := make(chan events.Decoded, 4)
	if _, err := admin.Subscribe("gpusched.evt.security.*", func(m *nats.Msg) {
		var ev events.Decoded
		if json.Unmarshal(m.Data, &ev) == nil {
			security <- ev
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}

	// far-node joins on its own credentials and runs a job pinned to its GPU.
	joinFarNode(t, s, admin, lease)
	id := mustAsk(t, admin, "gpusched.job.submit", `{"name":"far","vram":"20GB","duration":"100h","gpu":"far-gpu-0"}`)["job_id"].(string)
	onFarNode := func() bool {
		j := mustAsk(t, admin, "gpusched.job.get", `{"job_id":"`+id+`"}`)
		return j["state"] == "running" && j["node"] == "far-node"
	}
	waitFor(t, "the job to run on the node's GPU", 10*time.Second, onFarNode)

	js, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()
	stream, err := js.Stream(sctx, durable.EventStream("gpusched"))
	if err != nil {
		t.Fatal(err)
	}
	before, err := stream.Info(sctx)
	if err != nil {
		t.Fatal(err)
	}

	// The flood, on the node's own GPU event subject, from a second
	// connection with the node's credentials.
	flooder, err := s.Options("far-node").Connect("flood", 10*time.Second, nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer flooder.Close()
	body := []byte(`{"data":{"pad":"` + strings.Repeat("x", 400<<10) + `"}}`)
	sent := 0
	for i := 0; sent < 160<<20; i++ {
		if err := flooder.Publish("gpusched.evt.gpu.far-node.far-gpu-0.flood", body); err != nil {
			break // shut out
		}
		sent += len(body)
		if i%2 == 1 {
			if err := flooder.FlushTimeout(5 * time.Second); err != nil {
				break
			}
		}
	}
	ev := nextSecurityEvent(t, security, events.NodeCutOff)
	var data events.NodeBudget
	if err := json.Unmarshal(ev.Data, &data); err != nil || data.Node != "far-node" || data.Cuts != 1 || data.Until.IsZero() {
		t.Fatalf("cut-off event %s: %+v (%v)", ev.Data, data, err)
	}
	if sent >= 160<<20 {
		t.Fatalf("far-node published all %d MiB: it was not cut off", sent>>20)
	}
	// Nothing the others wrote was evicted: the stream starts where it did.
	after, err := stream.Info(sctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.State.FirstSeq != before.State.FirstSeq {
		t.Fatalf("the stream's first event moved from %d to %d: the flood (%d MiB sent) evicted history",
			before.State.FirstSeq, after.State.FirstSeq, sent>>20)
	}
	grew := after.State.Bytes - before.State.Bytes
	// The budget is 2 MiB; what passes while the keeper reloads the
	// server comes on top (3.1–6.3 MiB kept in five runs here).
	if grew > 24<<20 {
		t.Fatalf("the stream kept %d MiB more after the flood: far more than the 2 MiB budget", grew>>20)
	}
	t.Logf("far-node sent %d MiB before it was cut off; the stream grew by %.1f MiB", sent>>20, float64(grew)/(1<<20))

	// Shut out for the cool-off: its credentials are refused.
	if nc, err := s.Options("far-node").Connect("again", 5*time.Second, nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("far-node could connect again during its cool-off")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("far-node during its cool-off: %v, want an authorization refusal", err)
	}
	// The cost is the node's: its GPU goes down by the lease, its job is
	// no longer running there; the rest of the cluster works.
	waitFor(t, "the cut-off node's job to stop running there", 3*lease, func() bool { return !onFarNode() })
	alice := s.As(t, "alice")
	if reply, err := alice.Request("gpusched.job.submit", []byte(`{"name":"after-flood","vram":"1GB","util":10,"duration":"10m"}`), 5*time.Second); err != nil ||
		!strings.Contains(string(reply.Data), `"job_id"`) {
		t.Fatalf("a tenant's submit while far-node is cut off: %v %s", err, msgData(reply))
	}

	// Readmitted after the cool-off: the node's own connection comes
	// back (it keeps trying), the node rejoins and its job runs again.
	nextSecurityEvent(t, security, events.NodeReadmitted)
	waitFor(t, "the job to run on the readmitted node again", 10*time.Second, onFarNode)
	if _, err := flooder.Request("gpusched.cluster.snapshot", nil, time.Second); !errors.Is(err, nats.ErrConnectionClosed) {
		t.Fatalf("the flooding connection (no reconnects): %v, want closed", err)
	}
}

func nextSecurityEvent(t *testing.T, ch <-chan events.Decoded, typ string) events.Decoded {
	t.Helper()
	select {
	case ev := <-ch:
		if ev.Type != events.Type("security", typ) {
			t.Fatalf("security event %s, want %s", ev.Type, typ)
		}
		return ev
	case <-time.After(15 * time.Second):
		t.Fatalf("no %s event", typ)
	}
	return events.Decoded{}
}

// joinFarNode starts the node far-node (one A100-80GB, far-gpu-0) on its
// own credentials over TCP, as `cluster node --nkey` does, and waits until
// the scheduler counts it alive beside the reference cluster's two nodes.
// It returns the node's connection and a stop that crashes it (stops the
// actors, closes the connection); the test's end stops it too.
func joinFarNode(t *testing.T, s *livetest.Secured, admin *nats.Conn, lease time.Duration) (hostConn *nats.Conn, crash func()) {
	t.Helper()
	hostConn, err := s.Options("far-node").Connect("far-node", 10*time.Second, nats.CustomInboxPrefix(auth.NodeInboxPrefix("far-node")))
	if err != nil {
		t.Fatal(err)
	}
	a100, err := model.LookupModel("A100-80GB")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := node.Start(ctx, node.HostConfig{Spec: model.NodeSpec{ID: "far-node", CPU: 16, Memory: 64 * model.GiB,
		GPUs: []model.GPUSpec{{ID: "far-gpu-0", Model: a100}}}, Clock: s.Cluster.Clock, Subjects: events.NewSubjects(""),
		Conn: hostConn, Logger: zap.NewNop(), Lease: lease, Heartbeat: min(lease/4, node.DefaultHeartbeat)})
	if err != nil {
		cancel()
		hostConn.Close()
		t.Fatal(err)
	}
	var once sync.Once
	crash = func() { once.Do(func() { cancel(); h.Wait(); hostConn.Close() }) }
	t.Cleanup(crash)
	waitFor(t, "the node and its GPU to join", 10*time.Second, func() bool {
		sum := mustAsk(t, admin, "gpusched.cluster.snapshot", `{"summary_only":true}`)["summary"].(obj)
		return sum["gpus_alive"].(float64) == 9 && sum["nodes_alive"].(float64) == 3
	})
	return hostConn, crash
}
