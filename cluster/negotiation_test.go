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
	_, nc := startCluster(t, cluster.Config{Policy: "first-fit"})
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
	_, nc := startCluster(t, cluster.Config{Policy: "first-fit", Speed: 3600})
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
