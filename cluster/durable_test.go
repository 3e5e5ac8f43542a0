package cluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/internal/livetest"
)

// queueOrder is the ids in the snapshot's queue, in queue order.
func queueOrder(t *testing.T, nc *nats.Conn) []string {
	t.Helper()
	var ids []string
	for _, q := range req(t, nc, "gpusched.cluster.snapshot", `{}`)["queue"].([]any) {
		ids = append(ids, q.(obj)["job_id"].(string))
	}
	return ids
}

// TestKillSchedulerKeepsQueueOnTheJournal kills the scheduler of a
// cluster that keeps a job journal (in memory) while one job runs and
// three wait: the reply says nothing queued was lost, the restarted
// scheduler has the three in the same order and the running one
// re-learned from its GPU, and all four complete.
func TestKillSchedulerKeepsQueueOnTheJournal(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Speed: 60, StarvationAge: 1000 * time.Hour, RestartBackoff: 20 * time.Millisecond,
		Store: durable.Memory})
	running := submit(t, nc, `{"name":"runner","vram":"30GB","duration":"2m","gpu":"gpu-1","preemptible":false}`)
	waitState(t, nc, running, "running", 5*time.Second)
	var waiting []string
	for i, prio := range []string{"low", "high", "medium"} {
		waiting = append(waiting, submit(t, nc, fmt.Sprintf(`{"name":"waiter-%d","priority":%q,"vram":"30GB","duration":"1m","gpu":"gpu-1","preemptible":false}`, i, prio)))
	}
	before := queueOrder(t, nc)
	if len(before) != 3 {
		t.Fatalf("queue %v, want the three waiters", before)
	}
	rep := req(t, nc, "gpusched.chaos.kill-scheduler", `{}`)
	if rep["ok"] != true || rep["queued_lost"] != nil || rep["queued"].(float64) != 3 || !strings.Contains(rep["note"].(string), "journal") {
		t.Fatalf("kill-scheduler reply %v, want ok, nothing lost, 3 queued kept", rep)
	}
	waitFor(t, "the restarted scheduler to answer with its queue", 10*time.Second, func() bool {
		s := tryReq(nc, "gpusched.cluster.snapshot", `{}`)
		return s != nil && len(s["queue"].([]any)) == 3
	})
	if after := queueOrder(t, nc); !slices.Equal(after, before) {
		t.Fatalf("queue after the restart %v, want %v", after, before)
	}
	j := waitState(t, nc, running, "running", 10*time.Second)
	if ids := j["gpu_ids"].([]any); len(ids) != 1 || ids[0] != "gpu-1" {
		t.Fatalf("the running job is on %v after the restart, want gpu-1 (re-learned)", ids)
	}
	for _, id := range append([]string{running}, waiting...) {
		waitState(t, nc, id, "completed", 30*time.Second)
	}
	if h := history(getJob(t, nc, running)); strings.Contains(h, "lost") {
		t.Fatalf("the running job was lost across the scheduler restart: %s", h)
	}
}

// TestRestartOnTheSameDataDir stops a whole cluster (server, GPUs,
// scheduler) with a job running and three waiting, and starts another on
// the same data dir: the waiting jobs are still queued in the same order,
// the running one (its GPUs are gone with the process) is re-queued from
// its last checkpoint, simulated time resumes where it was, and every job
// completes, in queue order.
func TestRestartOnTheSameDataDir(t *testing.T) {
	dir := t.TempDir()
	cfg := cluster.Config{Speed: 60, StarvationAge: 1000 * time.Hour, Store: durable.File, DataDir: dir, Lease: time.Second}
	c1, nc := livetest.Cluster(t, cfg)
	running := submit(t, nc, `{"name":"runner","vram":"30GB","duration":"4m","checkpoint":"1m","gpu":"gpu-1","preemptible":false}`)
	var waiting []string
	for i, prio := range []string{"low", "high", "medium"} {
		waiting = append(waiting, submit(t, nc, fmt.Sprintf(`{"name":"waiter-%d","priority":%q,"vram":"30GB","duration":"1m","gpu":"gpu-1","preemptible":false}`, i, prio)))
	}
	before := queueOrder(t, nc)
	waitFor(t, "the runner to pass two checkpoints", 10*time.Second, func() bool {
		return getJob(t, nc, running)["progress_s"].(float64) >= 150
	})
	simBefore := simTime(t, req(t, nc, "gpusched.cluster.snapshot", `{}`)["simtime"])
	c1.Stop()

	_, nc2 := livetest.Cluster(t, cfg)
	// The fresh GPUs take the first waiter at once: the rest of the queue
	// is the rest of the order it had.
	if after := queueOrder(t, nc2); len(after) == 0 || !slices.Equal(after, before[len(before)-len(after):]) {
		t.Fatalf("queue after the restart %v, want the tail of %v", after, before)
	}
	if simAfter := simTime(t, req(t, nc2, "gpusched.cluster.snapshot", `{}`)["simtime"]); simAfter.Before(simBefore) {
		t.Fatalf("simulated time went back from %s to %s across the restart", simBefore, simAfter)
	}
	// Until the new GPUs have been read, the journal's word stands
	// ("running"); then it is lost with its GPU and runs again.
	var j obj
	waitFor(t, "the runner to be lost with its GPU and run again", 15*time.Second, func() bool {
		j = getJob(t, nc2, running)
		return j["state"] == "running" && strings.Contains(history(j), "running,lost,queued,placed,running")
	})
	if p := j["progress_s"].(float64); p < 120 {
		t.Fatalf("runner resumed from %vs, want at least the 120s checkpoint it had passed", p)
	}
	var started []time.Time
	for _, id := range waiting {
		j := waitState(t, nc2, id, "completed", 60*time.Second)
		started = append(started, simTime(t, j["started_at"]))
	}
	// Queue order is priority first: high (1), medium (2), low (0).
	if !(started[1].Before(started[2]) && started[2].Before(started[0])) {
		t.Fatalf("waiters started at %v, want high, medium, low", started)
	}
}

func simTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %v: %v", v, err)
	}
	return at
}
