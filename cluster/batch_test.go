package cluster_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
)

// batchOf is a control batch as it crossed the bus: its reply subject
// and items.
type batchOf struct {
	reply string
	items []struct {
		GPU     string `json:"gpu"`
		Call    string `json:"call"`
		Control obj    `json:"control"`
	}
}

// recordBatches keeps every control batch sent to a node's batch subject
// under subject (a wildcard allowed).
func recordBatches(t *testing.T, nc *nats.Conn, subject string) func() []batchOf {
	t.Helper()
	var mu sync.Mutex
	var got []batchOf
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		b := batchOf{reply: m.Reply}
		var body struct {
			Items json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(m.Data, &body); err != nil {
			t.Errorf("batch on %s is not JSON: %s", m.Subject, m.Data)
			return
		}
		if err := json.Unmarshal(body.Items, &b.items); err != nil {
			t.Errorf("batch items on %s: %v: %s", m.Subject, err, m.Data)
			return
		}
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() []batchOf {
		mu.Lock()
		defer mu.Unlock()
		return append([]batchOf(nil), got...)
	}
}

// TestControlsToANodeGoBatched: a node's heartbeat says it takes batched
// controls, so a placement's reservations at the node actor and its GPU
// go in one message on the node's batch subject, and so do the commits;
// nothing goes on the actors' own control subjects, and the job runs.
func TestControlsToANodeGoBatched(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour}, Timing: cluster.Timing{Speed: 60}})
	batches := recordBatches(t, nc, "gpusched.node.*.batch")
	var direct sync.Map
	if _, err := nc.Subscribe("gpusched.gpu.*.*.ctl", func(m *nats.Msg) { direct.Store(m.Subject, string(m.Data)) }); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe("gpusched.node.*.ctl", func(m *nats.Msg) { direct.Store(m.Subject, string(m.Data)) }); err != nil {
		t.Fatal(err)
	}
	id := submit(t, nc, `{"name":"one","vram":"4GB","util":20,"duration":"10h"}`)
	job := waitState(t, nc, id, "running", 10*time.Second)
	// The batches reach this test's subscription on a goroutine of their
	// own, which may lag behind the job's answer (CI once saw none yet).
	waitFor(t, "the job's commits to be seen batched", 5*time.Second, func() bool {
		n := 0
		for _, b := range batches() {
			for _, it := range b.items {
				if it.Control["job_id"] == id && it.Control["op"] == "commit" {
					n++
				}
			}
		}
		return n >= 2
	})
	ops := map[string]int{}
	for _, b := range batches() {
		kinds := map[string]bool{}
		for _, it := range b.items {
			if it.Control["job_id"] != id {
				continue
			}
			op := it.Control["op"].(string)
			ops[op]++
			kinds[fmt.Sprint(op, it.GPU != "")] = true
			if op == "reserve" && (it.Call == "" || it.Control["call"] != it.Call || b.reply == "") {
				t.Errorf("a reservation without its call or a reply subject: %+v (reply %q)", it, b.reply)
			}
			if op == "commit" && it.Call != "" {
				t.Errorf("a commit asks for an answer: %+v", it)
			}
		}
		for _, op := range []string{"reserve", "commit"} {
			if kinds[op+" true"] != kinds[op+" false"] {
				t.Errorf("the %s at the node actor and at the GPU went in different batches: %v", op, kinds)
			}
		}
	}
	if ops["reserve"] != 2 || ops["commit"] != 2 {
		t.Errorf("the job's batched controls: %v, want a reserve and a commit at the node and at %v", ops, job["gpu_ids"])
	}
	direct.Range(func(k, v any) bool {
		t.Errorf("a control on an actor's own subject while its node takes batches: %s %s", k, v)
		return true
	})
}

// TestABatchAnswerIsBelievedOnlyForItsOwnCalls: two nodes that take
// batched controls are asked to describe their GPU, each in a batch of
// its own. An answer on node A's batch reply subject naming the call of
// node B's batch — a description of B's GPU, forged by A, which may
// answer only what it was asked — is dropped: B's own answer, sent after,
// is the one the scheduler believes. (Believed, the forgery would have
// answered B's call first, and B's truth would have come too late.)
func TestABatchAnswerIsBelievedOnlyForItsOwnCalls(t *testing.T) {
	c, nc := startCluster(t, cluster.Config{Hardware: cluster.Hardware{Lease: rogueLease, Heartbeat: rogueLease / 5}, Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour}, Timing: cluster.Timing{Speed: 60}})
	fake, err := nats.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	toA := recordBatches(t, fake, "gpusched.node.fake-a.batch")
	toB := recordBatches(t, fake, "gpusched.node.fake-b.batch")
	heartbeat := func(node, gpu string, beat int) {
		b, _ := json.Marshal(obj{"specversion": "1.0", "id": fmt.Sprintf("%s-hb-%d", node, beat), "source": "/node/" + node + "/1",
			"type": "gpusched.node.heartbeat", "seq": beat, "time": time.Now(), "simtime": time.Now(),
			"data": obj{"node": node, "incarnation": 1, "cpu_total": 64, "memory_total": 1 << 38, "beat": beat, "batch_ctl": true,
				"gpus": []obj{{"gpu": gpu, "incarnation": 1, "alive": true}}}})
		if err := fake.Publish("gpusched.evt.node."+node+".heartbeat", b); err != nil {
			t.Fatal(err)
		}
	}
	beat := 0
	waitFor(t, "a describe batch to each fake node", 10*time.Second, func() bool {
		beat++
		heartbeat("fake-a", "fake-a-gpu-0", beat)
		heartbeat("fake-b", "fake-b-gpu-0", beat)
		fake.Flush()
		return len(toA()) > 0 && len(toB()) > 0
	})
	a, b := toA()[0], toB()[0]
	if len(b.items) != 1 || b.items[0].Control["op"] != "describe" || b.items[0].GPU != "fake-b-gpu-0" || b.reply == a.reply {
		t.Fatalf("batches: to A %+v, to B %+v", a, b)
	}
	status := func(model string, vram int64, incarnation int) obj {
		return obj{"gpu": "fake-b-gpu-0", "node": "fake-b", "model": model, "incarnation": incarnation, "version": 1,
			"vram_model": "contiguous", "vram_total": vram, "jobs": []obj{}}
	}
	answer := func(reply string, st obj) {
		data, _ := json.Marshal(obj{"ok": true, "version": 1, "call": b.items[0].Call, "status": st})
		if err := fake.Publish(reply, data); err != nil {
			t.Fatal(err)
		}
		if err := fake.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	answer(a.reply, status("H100-80GB", 80<<30, 7)) // A, forging B's answer
	answer(b.reply, status("A100-40GB", 40<<30, 1)) // B's own
	var gpu obj
	waitFor(t, "fake-b's GPU described", 10*time.Second, func() bool {
		beat++
		heartbeat("fake-a", "fake-a-gpu-0", beat)
		heartbeat("fake-b", "fake-b-gpu-0", beat)
		for _, g := range req(t, nc, "gpusched.cluster.snapshot", obj{})["gpus"].([]any) {
			if g := g.(obj); g["gpu"] == "fake-b-gpu-0" && g["unknown"] != true {
				gpu = g
				return true
			}
		}
		return false
	})
	if gpu["model"] != "A100-40GB" || gpu["incarnation"] != 1.0 {
		t.Errorf("fake-b's GPU as the scheduler knows it: %v; want B's own answer (A100-40GB, incarnation 1), not A's forgery", gpu)
	}
}
