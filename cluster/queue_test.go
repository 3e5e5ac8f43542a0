package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/model"
)

// queueNames is the names of the jobs in a snapshot's queue, in order.
func queueNames(t *testing.T, snap obj) string {
	t.Helper()
	var names []string
	for _, j := range snap["queue"].([]any) {
		names = append(names, j.(obj)["name"].(string))
	}
	return strings.Join(names, ",")
}

// TestQueueOrderSwitchesLive: three jobs wait for one GPU; the queue is
// in the order in force (priority by default), sched.strategy
// {"queue":…} re-sorts it at once and says what it replaced, an unknown
// order (or an unknown policy beside a good order) changes nothing, and
// the next job placed is the head of the order in force.
func TestQueueOrderSwitchesLive(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour}, Timing: cluster.Timing{Speed: 60}})
	blocker := submit(t, nc, `{"name":"blocker","vram":"70GiB","util":90,"duration":"100h","gpu":"gpu-7","preemptible":false}`)
	waitState(t, nc, blocker, "running", 10*time.Second)
	// Not preemptible: preemption is by priority whatever the queue order,
	// and this test is about the order alone.
	long := submit(t, nc, `{"name":"long","priority":"high","vram":"70GiB","util":90,"duration":"10h","gpu":"gpu-7","preemptible":false}`)
	short := submit(t, nc, `{"name":"short","priority":"low","vram":"70GiB","util":90,"duration":"10m","gpu":"gpu-7","preemptible":false}`)
	mid := submit(t, nc, `{"name":"mid","priority":"medium","vram":"70GiB","util":90,"duration":"1h","gpu":"gpu-7","preemptible":false}`)
	events := recordEvents(t, nc, "gpusched.evt.sched.policy")

	if got := queueNames(t, req(t, nc, "gpusched.cluster.snapshot", obj{})); got != "long,mid,short" {
		t.Fatalf("queue under the default order: %s, want long,mid,short (priority)", got)
	}
	rep := req(t, nc, "gpusched.sched.strategy", obj{"queue": "sjf"})
	if rep["queue"] != "sjf" || rep["previous_queue"] != "priority" || rep["policy"] != "binpack" {
		t.Fatalf("switch to sjf: %v", rep)
	}
	if got := queueNames(t, req(t, nc, "gpusched.cluster.snapshot", obj{})); got != "short,mid,long" {
		t.Fatalf("queue under sjf: %s, want short,mid,long", got)
	}
	for body, field := range map[string]string{`{"queue":"lottery"}`: "queue", `{"policy":"nope","queue":"fifo"}`: "policy"} {
		rep := req(t, nc, "gpusched.sched.strategy", body)
		if e, _ := rep["error"].(obj); e == nil || e["field"] != field {
			t.Errorf("%s: %v, want an error naming %s", body, rep, field)
		}
	}
	rep = req(t, nc, "gpusched.sched.strategy", obj{})
	if rep["queue"] != "sjf" || !strings.Contains(strings.Join(anyStrings(rep["queues"]), ","), "las") {
		t.Fatalf("after refused switches: %v, want sjf in force and las among the queues", rep)
	}
	waitFor(t, "the sched.policy event of the switch", 5*time.Second, func() bool {
		for _, ev := range events.snapshot() {
			if d, _ := ev["data"].(obj); d != nil && d["queue"] == "sjf" && d["previous_queue"] == "priority" {
				return true
			}
		}
		return false
	})
	// The GPU frees: the head of sjf runs, not the high-priority job.
	req(t, nc, "gpusched.job.cancel", obj{"job_id": blocker})
	waitState(t, nc, short, "running", 10*time.Second)
	for _, id := range []string{long, mid} {
		if s := getJob(t, nc, id)["state"]; s != "queued" {
			t.Errorf("job %s is %v, want queued behind short", id, s)
		}
	}
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestRoundTimeSlices: on one GPU, under srtf with a round every
// simulated minute, a long job that runs is stopped by the round when a
// short one arrives (its event says so), the short one runs and
// completes, and the long one resumes (from its last checkpoint).
func TestRoundTimeSlices(t *testing.T) {
	shape, err := model.ParseGPUs("1xA100-80GB")
	if err != nil {
		t.Fatal(err)
	}
	_, nc := startCluster(t, cluster.Config{Hardware: cluster.Hardware{Shape: shape}, Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour, Queue: "srtf", RoundEvery: time.Minute}, Timing: cluster.Timing{Speed: 600}})
	long := submit(t, nc, `{"name":"long","vram":"70GiB","util":90,"duration":"10h","checkpoint":"1m"}`)
	waitState(t, nc, long, "running", 10*time.Second)
	short := submit(t, nc, `{"name":"short","vram":"70GiB","util":90,"duration":"10m"}`)
	waitState(t, nc, short, "running", 10*time.Second)
	j := getJob(t, nc, long)
	var reason string
	for _, h := range j["history"].([]any) {
		if h := h.(obj); h["state"] == "preempted" {
			reason, _ = h["reason"].(string)
		}
	}
	if !strings.Contains(reason, "round skip-fit") || !strings.Contains(reason, "srtf") {
		t.Fatalf("the long job's history %s, preempted because %q: want the round's word", history(j), reason)
	}
	waitState(t, nc, short, "completed", 20*time.Second)
	j = waitState(t, nc, long, "running", 10*time.Second)
	if j["preemptions"] != 1.0 {
		t.Fatalf("the long job resumed after %v preemptions, want 1 (the round stops a job only for one ahead of it)", j["preemptions"])
	}
}

// TestPreemptNone: with the preemption rule "none" a high-priority job
// that fits nowhere waits behind a low-priority one instead of stopping
// it.
func TestPreemptNone(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour, Preempt: "none"}, Timing: cluster.Timing{Speed: 60}})
	low := submit(t, nc, `{"name":"low","priority":"low","vram":"70GiB","util":90,"duration":"100h","gpu":"gpu-7"}`)
	waitState(t, nc, low, "running", 10*time.Second)
	high := submit(t, nc, `{"name":"high","priority":"high","vram":"70GiB","util":90,"duration":"1h","gpu":"gpu-7"}`)
	waitFor(t, "the high-priority job's pending reason", 5*time.Second, func() bool {
		j := getJob(t, nc, high)
		return j["state"] == "queued" && j["reason"] != nil && j["reason"] != ""
	})
	if j := getJob(t, nc, low); j["state"] != "running" || j["preemptions"] != 0.0 {
		t.Fatalf("the low-priority job is %v after %v preemptions, want running, none", j["state"], j["preemptions"])
	}
}
