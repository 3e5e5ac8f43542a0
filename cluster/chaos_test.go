package cluster_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/cluster"
)

// TestKillGPURequeuesItsJob kills the GPU a checkpointed job runs on: the
// reply names the lost job, the GPU comes back as a new incarnation, and
// the job goes lost → queued → running again with the work up to its last
// checkpoint. Bad kill requests get errors naming the field.
func TestKillGPURequeuesItsJob(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour}, Timing: cluster.Timing{Speed: 1200}})
	events := recordEvents(t, nc, "gpusched.evt.>")
	id := submit(t, nc, `{"name":"victim","priority":"medium","vram":"20GB","util":60,"duration":"10h","checkpoint":"10m","gpu":"gpu-2"}`)
	waitFor(t, "progress past 25 simulated minutes", 20*time.Second, func() bool {
		return getJob(t, nc, id)["progress_s"].(float64) > 1500
	})

	for body, field := range map[string]string{
		`{}`:                           "gpu",
		`{"gpu":"gpu-99"}`:             "gpu",
		`{"gpu":"gpu-2","node":"n-9"}`: "node",
		`{"gpu":3}`:                    "gpu",
		`{"gpu":"gpu-2","when":"now"}`: "when",
		`not json`:                     "body",
	} {
		rep := req(t, nc, "gpusched.chaos.kill", body)
		e, _ := rep["error"].(obj)
		if e == nil || e["field"] != field {
			t.Fatalf("chaos.kill %s: reply %v, want an error naming %q", body, rep, field)
		}
	}

	rep := req(t, nc, "gpusched.chaos.kill", `{"gpu":"gpu-2"}`)
	if rep["ok"] != true || fmt.Sprint(rep["lost_jobs"]) != fmt.Sprint([]any{id}) || rep["incarnation"].(float64) != 2 {
		t.Fatalf("kill reply %v, want ok, lost_jobs [%s], incarnation 2", rep, id)
	}
	// The supervisor publishes gpu.down after the kill's reply: wait for
	// the scheduler to have acted on it.
	const want = "submitted,queued,placed,running,lost,queued,placed,running"
	var j obj
	var got string
	waitFor(t, "the job lost and running again", 10*time.Second, func() bool {
		j = getJob(t, nc, id)
		var states []string
		for _, h := range j["history"].([]any) {
			states = append(states, h.(obj)["state"].(string))
		}
		got = strings.Join(states, ",")
		return got == want || len(states) > 8
	})
	if got != want {
		t.Fatalf("history %s, want %s", got, want)
	}
	lost := j["lost_work_s"].(float64)
	if lost < 0 || lost >= 600 {
		t.Fatalf("lost_work_s %v, want the work since the last 10-minute checkpoint (0..600)", lost)
	}
	waitFor(t, "gpu.down and the new incarnation's gpu.up", 5*time.Second, func() bool {
		return len(events.find("gpusched.gpu.down", "gpu-2")) == 1 && len(events.find("gpusched.gpu.up", "gpu-2")) >= 1
	})
	down := events.find("gpusched.gpu.down", "gpu-2")[0]
	if !strings.HasSuffix(down["source"].(string), "/gpu-2/1") {
		t.Fatalf("gpu.down from %v, want the first incarnation", down["source"])
	}
	ups := events.find("gpusched.gpu.up", "gpu-2")
	last := ups[len(ups)-1]
	if !strings.HasSuffix(last["source"].(string), "/gpu-2/2") || last["seq"].(float64) != 1 {
		t.Fatalf("gpu.up after the kill from %v seq %v, want incarnation 2 starting at seq 1", last["source"], last["seq"])
	}
	// The resumed job's kept progress is a whole number of checkpoints.
	waitFor(t, "the job to run again", 5*time.Second, func() bool {
		return getJob(t, nc, id)["progress_s"].(float64) >= 600
	})
	if kept := getJob(t, nc, id)["progress_s"].(float64); kept < 1200 || math.IsNaN(kept) {
		t.Fatalf("job resumed at %vs, want at least two checkpoints", kept)
	}
}

// TestAPinOnceHoldsForTheFirstPlacementOnly (issue 45 item 6): a job
// pinned with pin_once (as the demo draws its starting picture) is placed
// where its pin says, its decision saying so and where the policy alone
// would have put it; once its GPU is gone it runs elsewhere at once,
// where a pin for life would wait for that GPU. pin_once without a pin
// is refused naming it.
func TestAPinOnceHoldsForTheFirstPlacementOnly(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Hardware: cluster.Hardware{RestartBackoff: time.Hour}, Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour}, Timing: cluster.Timing{Speed: 600}})
	if rep := req(t, nc, "gpusched.job.submit", `{"name":"x","vram":"8GB","duration":"1h","pin_once":true}`); rep["error"] == nil || rep["error"].(obj)["field"] != "pin_once" {
		t.Fatalf("pin_once without a pin: %v, want an error naming pin_once", rep)
	}
	id := submit(t, nc, `{"name":"bert","vram":"20GB","util":60,"duration":"10h","checkpoint":"10m","gpu":"gpu-2","pin_once":true}`)
	j := waitState(t, nc, id, "running", 10*time.Second)
	if fmt.Sprint(j["gpu_ids"]) != "[gpu-2]" {
		t.Fatalf("first placement on %v, want gpu-2 (its pin)", j["gpu_ids"])
	}
	d := req(t, nc, "gpusched.sched.explain", `{"job_id":"`+id+`"}`)
	if d["pinned"] != "gpu-2" || d["unpinned_choice"] == nil || d["unpinned_choice"] == "" {
		t.Errorf("decision %v: want pinned gpu-2 and where binpack alone would have put it", d)
	}
	if rep := req(t, nc, "gpusched.chaos.kill", `{"gpu":"gpu-2"}`); rep["ok"] != true {
		t.Fatalf("kill: %v", rep)
	}
	var gpus string
	waitFor(t, "the job running on another GPU", 10*time.Second, func() bool {
		j = getJob(t, nc, id)
		gpus = fmt.Sprint(j["gpu_ids"])
		return j["state"] == "running" && gpus != "[gpu-2]" && len(j["history"].([]any)) > 4
	})
}
