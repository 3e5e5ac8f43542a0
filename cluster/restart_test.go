package cluster_test

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/cluster"
)

// TestKillSchedulerRelearnsRunningJobs kills the scheduler while a job
// runs and another waits: the restarted scheduler re-learns the running
// job from its GPU (same id, still running, and it completes), reports the
// queued one as lost in its reply, and takes new jobs at once.
func TestKillSchedulerRelearnsRunningJobs(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Hardware: cluster.Hardware{RestartBackoff: 20 * time.Millisecond}, Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour}, Timing: cluster.Timing{Speed: 60}})
	running := submit(t, nc, `{"name":"runner","priority":"high","vram":"30GB","util":50,"duration":"5m","gpu":"gpu-1","preemptible":false}`)
	waitState(t, nc, running, "running", 5*time.Second)
	queued := submit(t, nc, `{"name":"waiter","priority":"low","vram":"30GB","duration":"5m","gpu":"gpu-1"}`)
	waitState(t, nc, queued, "queued", 5*time.Second)
	quick := submit(t, nc, `{"name":"quick","vram":"4GB","duration":"30s","gpu":"gpu-2"}`)
	waitState(t, nc, quick, "completed", 5*time.Second)
	totals := func() (float64, float64) {
		m := req(t, nc, "gpusched.cluster.snapshot", `{"summary_only":true}`)["summary"].(map[string]any)
		return m["jobs_completed"].(float64), m["energy_kwh"].(float64)
	}
	completedBefore, energyBefore := totals()

	rep := req(t, nc, "gpusched.chaos.kill-scheduler", `{}`)
	if rep["ok"] != true || rep["queued_lost"].(float64) != 1 || rep["running"].(float64) != 1 || rep["incarnation"].(float64) != 2 {
		t.Fatalf("kill-scheduler reply %v, want ok, queued_lost 1, running 1, incarnation 2", rep)
	}
	var j obj
	waitFor(t, "the restarted scheduler to re-learn the running job", 10*time.Second, func() bool {
		j = tryReq(nc, "gpusched.job.get", `{"job_id":"`+running+`"}`)
		return j != nil && j["state"] == "running"
	})
	// The totals go on from the predecessor's: no drop at the restart.
	if completed, energy := totals(); completed < completedBefore || energy < energyBefore {
		t.Fatalf("after the restart: %v completed, %v kWh; before: %v, %v — totals went backwards", completed, energy, completedBefore, energyBefore)
	}
	if ids := j["gpu_ids"].([]any); len(ids) != 1 || ids[0] != "gpu-1" {
		t.Fatalf("re-learned job on %v, want gpu-1", ids)
	}
	if e := req(t, nc, "gpusched.job.get", `{"job_id":"`+queued+`"}`)["error"]; e == nil {
		t.Fatalf("the queued job survived the kill: the queue is not durable yet, so the reply must say it is lost")
	}
	fresh := submit(t, nc, `{"name":"after","vram":"4GB","duration":"1m"}`)
	waitState(t, nc, fresh, "running", 5*time.Second)
	waitState(t, nc, running, "completed", 20*time.Second)
}
