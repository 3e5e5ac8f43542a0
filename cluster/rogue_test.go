package cluster_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
)

// rogueLease is the lease of the rogue-node tests: the scheduler's call
// timeout is a quarter of it.
const rogueLease = time.Second

// rogueHeartbeat is a node heartbeat naming gpus (all alive, incarnation
// 1), as a node process would publish it: raw JSON, a CloudEvents envelope.
func rogueHeartbeat(t *testing.T, node string, beat int, gpus []string) []byte {
	t.Helper()
	var hb []obj
	for _, g := range gpus {
		hb = append(hb, obj{"gpu": g, "incarnation": 1, "alive": true})
	}
	b, err := json.Marshal(obj{"specversion": "1.0", "id": fmt.Sprintf("hb-%d", beat), "source": "/node/" + node + "/1",
		"type": "gpusched.node.heartbeat", "seq": beat, "time": time.Now(), "simtime": time.Now(),
		"data": obj{"node": node, "incarnation": 1, "cpu_total": 64, "memory_total": 1 << 38, "gpus": hb, "beat": beat}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rogueCluster starts the reference cluster with a short lease, runs a job
// on gpu-0 and connects the rogue node's client: the cluster's client, the
// running job's id and the rogue's connection.
func rogueCluster(t *testing.T) (*nats.Conn, string, *nats.Conn) {
	t.Helper()
	c, nc := startCluster(t, cluster.Config{
		Hardware: cluster.Hardware{
			Lease:          rogueLease,
			Heartbeat:      rogueLease / 5,
			RestartBackoff: 20 * time.Millisecond,
		},
		Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour},
		Timing:     cluster.Timing{Speed: 60},
	})
	id := submit(t, nc, `{"name":"steady","vram":"8GB","util":20,"duration":"100h","gpu":"gpu-0"}`)
	waitState(t, nc, id, "running", 10*time.Second)
	rogue, err := nats.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rogue.Close)
	return nc, id, rogue
}

// TestANodeThatNeverAnswersCostsOnlyItself: a node whose heartbeats name
// 1,000 GPUs it never describes (they never answer) must not hold the
// scheduler. Its requests are answered at once, no healthy GPU's lease
// lapses, a running job keeps running, and the rogue node is asked a few
// GPUs at a time. (The scheduler used to ask each GPU and wait for its
// reply in its loop: 1,000 × a quarter lease.)
func TestANodeThatNeverAnswersCostsOnlyItself(t *testing.T) {
	nc, id, rogue := rogueCluster(t)
	log := recordEvents(t, nc, "gpusched.evt.gpu.>")
	var asked atomic.Int64
	if _, err := rogue.Subscribe("gpusched.gpu.rogue.>", func(*nats.Msg) { asked.Add(1) }); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 1000 {
		ids = append(ids, fmt.Sprintf("rogue-gpu-%d", i))
	}
	start := time.Now()
	var slowest time.Duration
	for beat := 1; time.Since(start) < 3*rogueLease; beat++ {
		if err := rogue.Publish("gpusched.evt.node.rogue.heartbeat", rogueHeartbeat(t, "rogue", beat, ids)); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			sent := time.Now()
			if _, err := nc.Request("gpusched.cluster.snapshot", []byte(`{"summary_only":true}`), 5*time.Second); err != nil {
				t.Fatalf("snapshot while a node names 1,000 silent GPUs: %v", err)
			}
			slowest = max(slowest, time.Since(sent))
			time.Sleep(rogueLease / 20) // the heartbeat period of a busy node, not a synchronisation
		}
	}
	elapsed := time.Since(start)
	// Answered within the lease: before, the loop waited a call timeout per
	// silent GPU, and every healthy lease lapsed meanwhile.
	if slowest > rogueLease/2 {
		t.Errorf("slowest snapshot took %v while a node named 1,000 silent GPUs", slowest)
	}
	for _, ev := range log.find("gpusched.gpu.down", "") {
		if !strings.Contains(ev["_subject"].(string), ".rogue.") {
			t.Errorf("a healthy GPU went down: %v", ev)
		}
	}
	j := getJob(t, nc, id)
	if j["state"] != "running" || strings.Contains(history(j), "lost") {
		t.Errorf("the running job was disturbed: %s, history %s", j["state"], history(j))
	}
	// At most 8 describes in flight to the node; each call times out after
	// a quarter lease, so a few per window.
	limit := int64(8 * (elapsed/(rogueLease/4) + 2))
	if n := asked.Load(); n == 0 || n > limit {
		t.Errorf("the rogue node was asked %d times in %v, want between 1 and %d", n, elapsed, limit)
	}
}

// TestADescribeReplyAboutAnotherGPUIsNotBelieved: a node names a GPU of its
// own and, asked to describe it, answers with another node's GPU at a
// higher incarnation running a planted job. The scheduler must believe a
// reply only about the GPU and node it asked: gpu-0 stays node-0's first
// incarnation, its job keeps running, and no planted job appears.
func TestADescribeReplyAboutAnotherGPUIsNotBelieved(t *testing.T) {
	nc, id, rogue := rogueCluster(t)
	forged, _ := json.Marshal(obj{"ok": true, "version": 1000, "status": obj{
		"gpu": "gpu-0", "node": "node-0", "model": "A100-40GB", "incarnation": 99, "version": 1000, "vram_model": "contiguous",
		"vram_total": 40 << 30, "jobs": []obj{{"job_id": "planted", "name": "planted", "priority": "high", "state": "running",
			"vram": 1 << 30, "util": 10, "work_s": 3600, "assignment": obj{"name": "planted", "priority": "high", "vram": 1 << 30,
				"util": 10, "work_s": 3600, "spec": obj{"name": "planted", "tenant": "team-b", "vram": "1GiB", "duration": "1h"}}}}}})
	var asked atomic.Int64
	if _, err := rogue.Subscribe("gpusched.gpu.rogue.>", func(m *nats.Msg) {
		asked.Add(1)
		m.Respond(forged)
	}); err != nil {
		t.Fatal(err)
	}
	for beat := 1; asked.Load() < 3; beat++ {
		if beat > 100 {
			t.Fatal("the scheduler never asked the rogue node about its GPU")
		}
		rogue.Publish("gpusched.evt.node.rogue.heartbeat", rogueHeartbeat(t, "rogue", beat, []string{"rogue-gpu-0"}))
		rogue.Flush()
		time.Sleep(rogueLease / 10) // a heartbeat period, not a synchronisation
	}
	// Everything the scheduler heard before this request is handled
	// before it (one mailbox, in order).
	snap := req(t, nc, "gpusched.cluster.snapshot", obj{})
	for _, g := range snap["gpus"].([]any) {
		g := g.(obj)
		if g["gpu"] == "gpu-0" && (g["node"] != "node-0" || g["incarnation"] != 1.0) {
			t.Errorf("gpu-0 taken over by a forged reply: %v", g)
		}
	}
	list := req(t, nc, "gpusched.job.list", obj{})
	for _, j := range list["jobs"].([]any) {
		if j.(obj)["name"] == "planted" {
			t.Errorf("a planted job was adopted: %v", j)
		}
	}
	j := getJob(t, nc, id)
	if j["state"] != "running" || gpuIDs(j) != "gpu-0" {
		t.Errorf("the job on gpu-0 was disturbed: %s on %s", j["state"], gpuIDs(j))
	}
}

// TestARefusalAboutAnotherGPUIsNotBelieved: a node's GPU, asked to
// reserve a job pinned to it, refuses and attaches the status of another
// node's GPU at a higher incarnation. The refusal is a refusal; the status
// is dropped: gpu-0 stays node-0's first incarnation and its job runs on.
func TestARefusalAboutAnotherGPUIsNotBelieved(t *testing.T) {
	nc, id, rogue := rogueCluster(t)
	own, _ := json.Marshal(obj{"ok": true, "version": 1, "status": obj{"gpu": "rogue-gpu-0", "node": "rogue", "model": "A100-80GB",
		"incarnation": 1, "version": 1, "vram_model": "contiguous", "vram_total": 80 << 30, "jobs": []obj{}}})
	forged, _ := json.Marshal(obj{"ok": false, "reason": "insufficient VRAM", "version": 1000, "status": obj{
		"gpu": "gpu-0", "node": "node-0", "model": "A100-40GB", "incarnation": 99, "version": 1000, "vram_model": "contiguous",
		"vram_total": 40 << 30, "jobs": []obj{}}})
	var reserves atomic.Int64
	if _, err := rogue.Subscribe("gpusched.gpu.rogue.rogue-gpu-0.ctl", func(m *nats.Msg) {
		var c obj
		json.Unmarshal(m.Data, &c)
		switch c["op"] {
		case "describe":
			m.Respond(own)
		case "reserve":
			reserves.Add(1)
			m.Respond(forged)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := rogue.Subscribe("gpusched.node.rogue.*", func(m *nats.Msg) {
		if m.Reply != "" {
			m.Respond([]byte(`{"ok":true}`))
		}
	}); err != nil {
		t.Fatal(err)
	}
	beat := 0
	waitFor(t, "the rogue GPU to be known", 10*time.Second, func() bool {
		beat++
		rogue.Publish("gpusched.evt.node.rogue.heartbeat", rogueHeartbeat(t, "rogue", beat, []string{"rogue-gpu-0"}))
		rogue.Flush()
		snap := req(t, nc, "gpusched.cluster.snapshot", obj{})
		for _, g := range snap["gpus"].([]any) {
			// A GPU its node named but that has not described itself yet
			// is in the snapshot as "unknown": not placeable yet.
			if g.(obj)["gpu"] == "rogue-gpu-0" && g.(obj)["unknown"] != true {
				return true
			}
		}
		return false
	})
	submit(t, nc, `{"name":"bait","vram":"8GB","util":20,"duration":"1h","gpu":"rogue-gpu-0"}`)
	waitFor(t, "a reservation on the rogue GPU", 10*time.Second, func() bool {
		beat++
		rogue.Publish("gpusched.evt.node.rogue.heartbeat", rogueHeartbeat(t, "rogue", beat, []string{"rogue-gpu-0"}))
		return reserves.Load() > 0
	})
	snap := req(t, nc, "gpusched.cluster.snapshot", obj{})
	for _, g := range snap["gpus"].([]any) {
		if g := g.(obj); g["gpu"] == "gpu-0" && (g["node"] != "node-0" || g["incarnation"] != 1.0) {
			t.Errorf("gpu-0 taken over by a refusal's status: %v", g)
		}
	}
	if j := getJob(t, nc, id); j["state"] != "running" || gpuIDs(j) != "gpu-0" {
		t.Errorf("the job on gpu-0 was disturbed: %s on %s", j["state"], gpuIDs(j))
	}
}
