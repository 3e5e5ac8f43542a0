package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
)

// rogueReserve takes VRAM on a GPU behind the scheduler's back, straight
// through the GPU actor's control subject, so the scheduler's view is stale.
func rogueReserve(t *testing.T, nc *nats.Conn, node, gpu, vram string) {
	t.Helper()
	rep := req(t, nc, "gpusched.gpu."+node+"."+gpu+".ctl",
		`{"op":"reserve","job_id":"rogue-`+gpu+`","ttl_ms":60000,"job":{"name":"rogue","vram":`+vram+`,"util":10,"work_s":60}}`)
	if rep["ok"] != true {
		t.Fatalf("rogue reservation on %s refused: %v", gpu, rep)
	}
}

// TestRefusalIsRetriedElsewhere: the scheduler believes gpu-0 is empty,
// but its GPU actor refuses (the VRAM is taken); the scheduler aborts,
// corrects its view and places the job on the next candidate.
func TestRefusalIsRetriedElsewhere(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Scheduling: cluster.Scheduling{Policy: "first-fit"}})
	rogueReserve(t, nc, "node-0", "gpu-0", "40000000000")
	id := submit(t, nc, `{"name":"j","vram":"10GB","util":30,"duration":"1h"}`)
	j := getJob(t, nc, id)
	if j["state"] != "running" || gpuIDs(j) != "gpu-1" {
		t.Fatalf("job %v on %s, want running on gpu-1 after gpu-0 refused", j["state"], gpuIDs(j))
	}
	d := req(t, nc, "gpusched.sched.explain", map[string]string{"job_id": id})
	refusals, _ := d["refusals"].([]any)
	if len(refusals) != 1 || !strings.Contains(refusals[0].(string), "gpu-0: insufficient VRAM") {
		t.Fatalf("decision refusals %v, want gpu-0's refusal", refusals)
	}
	// The view learnt from the refusal: the next job goes to gpu-1 at once.
	id2 := submit(t, nc, `{"name":"k","vram":"10GB","util":30,"duration":"1h"}`)
	if d := req(t, nc, "gpusched.sched.explain", map[string]string{"job_id": id2}); d["refusals"] != nil || gpuIDs(getJob(t, nc, id2)) != "gpu-1" {
		t.Fatalf("second job: %v", d)
	}
}

// TestGangReservesEveryGPUAndAbortsOnRefusal: a 2-GPU gang lands on two
// GPUs of one node; when one GPU refuses, the reservation taken on the
// other is aborted (nothing leaks) and the gang goes elsewhere; it
// completes only when both shares have.
func TestGangReservesEveryGPUAndAbortsOnRefusal(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Scheduling: cluster.Scheduling{Policy: "first-fit"}, Timing: cluster.Timing{Speed: 3600}})
	// first-fit would take gpu-0 and gpu-1; gpu-1 refuses.
	rogueReserve(t, nc, "node-0", "gpu-1", "40000000000")
	id := submit(t, nc, `{"name":"gang","gpus":2,"vram":"30GB","util":50,"duration":"20m"}`)
	j := getJob(t, nc, id)
	if j["state"] != "running" || j["node"] != "node-0" || gpuIDs(j) != "gpu-0,gpu-2" {
		t.Fatalf("gang %v on %v %s, want running on node-0 gpu-0,gpu-2", j["state"], j["node"], gpuIDs(j))
	}
	// The reservation the first attempt made on gpu-0 was aborted: gpu-0
	// holds exactly the gang's share of the second attempt, once.
	d := req(t, nc, "gpusched.gpu.node-0.gpu-0.ctl", `{"op":"describe"}`)
	if jobs := d["status"].(obj)["jobs"].([]any); len(jobs) != 1 {
		t.Fatalf("gpu-0 holds %d allocations, want 1", len(jobs))
	}
	waitState(t, nc, id, "completed", 10*time.Second)
	for _, g := range []string{"gpu-0", "gpu-2"} {
		d := req(t, nc, "gpusched.gpu.node-0."+g+".ctl", `{"op":"describe"}`)
		if jobs := d["status"].(obj)["jobs"].([]any); len(jobs) != 0 {
			t.Fatalf("%s still holds %v after the gang completed", g, jobs)
		}
	}
}

// TestANodeHoldNoJobRunsOnIsFreedAtTheNodesRefusal: node-1's actor holds
// 30 of its 32 cores for a job no scheduler knows (committed behind the
// scheduler's back, as a hold whose release was lost would be). A job
// pinned there is refused for want of CPU; the refusal lists the node's
// holds, the scheduler frees the stranger's, and the job runs there.
// Before, the node refused it again at every pass, for good.
func TestANodeHoldNoJobRunsOnIsFreedAtTheNodesRefusal(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Timing: cluster.Timing{Speed: 60}})
	for _, op := range []string{`"op":"reserve","cpu":30,"memory":1000,"ttl_ms":60000`, `"op":"commit"`} {
		if rep := req(t, nc, "gpusched.node.node-1.ctl", `{`+op+`,"job_id":"ghost"}`); rep["ok"] != true {
			t.Fatalf("%s at node-1: %v", op, rep)
		}
	}
	id := submit(t, nc, `{"name":"pinned","vram":"10GB","duration":"1h","cpu":8,"node":"node-1"}`)
	j := waitState(t, nc, id, "running", 10*time.Second)
	if j["node"] != "node-1" {
		t.Fatalf("running on %v, want node-1", j["node"])
	}
	// The node holds the job's 8 cores now, not the ghost's 30: a reserve
	// of 20 more is refused, naming what it holds.
	rep := req(t, nc, "gpusched.node.node-1.ctl", `{"op":"reserve","cpu":30,"memory":1000,"ttl_ms":60000,"job_id":"probe"}`)
	holds, _ := rep["holds"].([]any)
	if rep["ok"] == true || len(holds) != 1 || holds[0].(obj)["job_id"] != id {
		t.Fatalf("a 30-core reserve at node-1: %v, want refused with the job's hold alone listed", rep)
	}
}
