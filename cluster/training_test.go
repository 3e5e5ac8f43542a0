package cluster_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/tracedir"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/pollux"
	"github.com/gpusched/gpusched/sim"
)

// TestATrainingJobWithoutATrainingClusterIsRefused: a cluster started
// without a Pollux model refuses a training job, naming the field.
func TestATrainingJobWithoutATrainingClusterIsRefused(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Timing: cluster.Timing{Speed: 60}})
	rep := req(t, nc, "gpusched.job.submit", `{"name":"bert","training":{"app":"bert","batch":384,"replicas":2}}`)
	if e, _ := rep["error"].(obj); e == nil || e["field"] != "training" {
		t.Fatalf("reply %v, want an error naming training", rep)
	}
}

// TestATrainingJobRunsOnAScaledClock: on a cluster with the Pollux model
// at 600× (a 60 s round every 100 ms), an ncf job of two replicas is
// submitted over the bus, placed by the next round across GPUs, stepped by
// them and completed; its job record carries its final state. An unknown
// application and a batch size outside the application's are refused.
func TestATrainingJobRunsOnAScaledClock(t *testing.T) {
	nc := trainingCluster(t, cluster.Config{Timing: cluster.Timing{Speed: 600}}, time.Time{})
	for body, field := range map[string]string{
		`{"name":"x","training":{"app":"gpt9","batch":384,"replicas":2}}`:                  "training.app",
		`{"name":"x","training":{"app":"ncf","batch":1,"replicas":2}}`:                     "training.batch",
		`{"name":"x","training":{"app":"ncf","batch":32768,"replicas":0}}`:                 "training.replicas",
		`{"name":"x","duration":"1h","training":{"app":"ncf","batch":32768,"replicas":1}}`: "duration",
		// 128 over 6 replicas is a local batch of 22, below any placement
		// measured: its GPUs would refuse it at every round, for ever.
		`{"name":"x","training":{"app":"cifar10","batch":128,"replicas":6}}`: "training.replicas",
	} {
		rep := req(t, nc, "gpusched.job.submit", body)
		if e, _ := rep["error"].(obj); e == nil || e["field"] != field {
			t.Errorf("%s: reply %v, want an error naming %s", body, rep, field)
		}
	}
	id := submit(t, nc, `{"name":"ncf-2","training":{"app":"ncf","batch":32768,"replicas":2}}`)
	j := waitState(t, nc, id, "running", 5*time.Second)
	if n := len(j["gpu_ids"].([]any)); n != 2 {
		t.Fatalf("running on %v, want 2 GPUs", j["gpu_ids"])
	}
	j = waitState(t, nc, id, "completed", 20*time.Second)
	st, _ := j["training_state"].(obj)
	if st == nil || st["done"] != true || st["completion_s"].(float64) <= st["first_alloc_s"].(float64) || st["restarts"].(float64) != 0 {
		t.Fatalf("completed with training state %v", st)
	}
}

// TestATrainingJobAcrossNodesSurvivesASchedulerRestart: a training job
// whose six replicas span both nodes runs; the scheduler is killed. The
// restarted one, with or without a job journal, reads the job back from
// every GPU that runs a replica, keeps its allocation (no restart charged,
// no preemption), and the job completes there. Before, it was re-learned
// from the first GPU that answered, its five other replicas were released
// as strays, and the training rounds no longer knew it: it ran on one GPU.
func TestATrainingJobAcrossNodesSurvivesASchedulerRestart(t *testing.T) {
	for _, store := range []durable.Storage{durable.None, durable.Memory} {
		t.Run("store="+store.String(), func(t *testing.T) {
			nc := trainingCluster(t, cluster.Config{Hardware: cluster.Hardware{RestartBackoff: 20 * time.Millisecond}, Timing: cluster.Timing{Speed: 600}, Durability: cluster.Durability{Store: store}}, time.Time{})
			released := subscribeReleases(t, nc)
			id := submit(t, nc, `{"name":"cifar-6","training":{"app":"cifar10","batch":768,"replicas":6}}`)
			j := waitState(t, nc, id, "running", 5*time.Second)
			gpus := fmt.Sprint(j["gpu_ids"])
			if rep := req(t, nc, "gpusched.chaos.kill-scheduler", `{}`); rep["ok"] != true {
				t.Fatalf("kill-scheduler: %v", rep)
			}
			// (Without a journal the job is unknown until a GPU is read.)
			waitFor(t, "the restarted scheduler to read the job back on all six GPUs", 10*time.Second, func() bool {
				j = tryReq(nc, "gpusched.job.get", `{"job_id":"`+id+`"}`)
				return j != nil && j["state"] == "running" && fmt.Sprint(j["gpu_ids"]) == gpus
			})
			j = waitState(t, nc, id, "completed", 20*time.Second)
			st, _ := j["training_state"].(obj)
			if st == nil || st["done"] != true || st["restarts"].(float64) != 0 || j["preemptions"].(float64) != 0 || fmt.Sprint(j["gpu_ids"]) != gpus {
				t.Fatalf("completed on %v with %v preemptions and training state %v; want on %s, no restart, no preemption",
					j["gpu_ids"], j["preemptions"], st, gpus)
			}
			if r := released(id); r != "" {
				t.Fatalf("a replica was released after the restart: %s", r)
			}
		})
	}
}

// TestATrainingJobThatCompletedWhileNoSchedulerWatchedKeepsItsEnd: the
// scheduler is killed and stays down (5 s, the leases 20 s) while a
// six-replica job completes. The restarted scheduler learns of the
// completion from the GPUs' ended jobs, which now carry the job's state
// when it left: its completion second, done. Before, it was read back
// with the state it was placed with, completed, and the next round
// dropped that unfinished state: the job ended with no training state, no
// JCT (with and without a journal).
func TestATrainingJobThatCompletedWhileNoSchedulerWatchedKeepsItsEnd(t *testing.T) {
	for _, store := range []durable.Storage{durable.None, durable.Memory} {
		t.Run("store="+store.String(), func(t *testing.T) {
			nc := trainingCluster(t, cluster.Config{Hardware: cluster.Hardware{RestartBackoff: 5 * time.Second, Lease: 20 * time.Second}, Timing: cluster.Timing{Speed: 600}, Durability: cluster.Durability{Store: store}}, time.Time{})
			id := submit(t, nc, `{"name":"cifar-6","training":{"app":"cifar10","batch":768,"replicas":6}}`)
			waitState(t, nc, id, "running", 5*time.Second)
			if rep := req(t, nc, "gpusched.chaos.kill-scheduler", `{}`); rep["ok"] != true {
				t.Fatalf("kill-scheduler: %v", rep)
			}
			var j obj
			waitFor(t, "the restarted scheduler to know the job completed", 20*time.Second, func() bool {
				j = tryReq(nc, "gpusched.job.get", `{"job_id":"`+id+`"}`)
				return j != nil && j["state"] == "completed"
			})
			h := fmt.Sprint(j["history"])
			st, _ := j["training_state"].(obj)
			if st == nil || st["done"] != true || st["completion_s"] == nil || st["completion_s"].(float64) <= st["first_alloc_s"].(float64) ||
				st["restarts"].(float64) != 0 || !strings.Contains(h, "re-learned") {
				t.Fatalf("completed with training state %v, history %s; want done with its completion second, no restart, learned after the restart", st, h)
			}
		})
	}
}

// TestAQueuedTrainingJobIsTakenBackFromTheJournal: a training job
// waiting for its first round when the scheduler is killed is taken back
// from the job journal into the training rounds, and runs and completes.
// Before, the restarted scheduler put it in no round: queued for good.
func TestAQueuedTrainingJobIsTakenBackFromTheJournal(t *testing.T) {
	// 60×: a round every simulated minute is a second of wall time, so
	// the kill comes before the round that would place the job.
	nc := trainingCluster(t, cluster.Config{Hardware: cluster.Hardware{RestartBackoff: 20 * time.Millisecond}, Timing: cluster.Timing{Speed: 60}, Durability: cluster.Durability{Store: durable.Memory}}, time.Now().Add(-59*time.Second/60))
	id := submit(t, nc, `{"name":"ncf-2","training":{"app":"ncf","batch":32768,"replicas":2}}`)
	if rep := req(t, nc, "gpusched.chaos.kill-scheduler", `{}`); rep["ok"] != true || rep["queued"].(float64) != 1 {
		t.Fatalf("kill-scheduler: %v, want the job queued then", rep)
	}
	waitFor(t, "the restarted scheduler to know the job", 5*time.Second, func() bool {
		j := tryReq(nc, "gpusched.job.get", `{"job_id":"`+id+`"}`)
		return j != nil && j["state"] != nil
	})
	j := waitState(t, nc, id, "completed", 30*time.Second)
	if st, _ := j["training_state"].(obj); st == nil || st["done"] != true {
		t.Fatalf("completed with training state %v", j["training_state"])
	}
}

// TestATrainingJobTheRoundLeavesWaitingSaysWhy: a job asking for more
// replicas than the cluster has GPUs waits under Tiresias (nodes may
// join), and says why, where before it waited with no reason at all.
func TestATrainingJobTheRoundLeavesWaitingSaysWhy(t *testing.T) {
	nc := trainingCluster(t, cluster.Config{Timing: cluster.Timing{Speed: 600}}, time.Time{})
	id := submit(t, nc, `{"name":"big","training":{"app":"cifar10","batch":4096,"replicas":16}}`)
	var j obj
	waitFor(t, "the round to say why the job waits", 5*time.Second, func() bool {
		j = tryReq(nc, "gpusched.job.get", `{"job_id":"`+id+`"}`)
		r, _ := j["reason"].(string)
		return strings.Contains(r, "asks for 16 replicas and the cluster has 8 GPUs")
	})
	if j["state"] != "queued" {
		t.Fatalf("the job is %v, want queued", j["state"])
	}
}

// TestATrainingJobWhoseGPUsOtherJobsHoldSaysSo: an ordinary job holds one
// GPU of eight; a Tiresias job of eight replicas waits and says that 7
// of the 8 GPUs are free of other kinds of job, and runs once that job is
// cancelled. Before the rounds counted only the GPUs other jobs leave, a
// round allocated it all eight and it said that 7 were free there.
func TestATrainingJobWhoseGPUsOtherJobsHoldSaysSo(t *testing.T) {
	nc := trainingCluster(t, cluster.Config{Timing: cluster.Timing{Speed: 600}}, time.Time{})
	other := submit(t, nc, `{"name":"eval","vram":"4GB","duration":"100h","gpu":"gpu-0"}`)
	waitState(t, nc, other, "running", 5*time.Second)
	id := submit(t, nc, `{"name":"cifar-8","training":{"app":"cifar10","batch":1024,"replicas":8}}`)
	waitFor(t, "the training job to say other jobs hold its GPUs", 5*time.Second, func() bool {
		j := tryReq(nc, "gpusched.job.get", `{"job_id":"`+id+`"}`)
		r, _ := j["reason"].(string)
		return strings.Contains(r, "asks for 8 replicas and 7 of the cluster's 8 GPUs are up and free of other kinds of job")
	})
	// The snapshot lists it in the queue its summary counts it in.
	snap := req(t, nc, "gpusched.cluster.snapshot", `{}`)
	queue, _ := snap["queue"].([]any)
	if n := snap["summary"].(obj)["jobs_queued"]; len(queue) != 1 || queue[0].(obj)["job_id"] != id || n != 1.0 {
		t.Fatalf("snapshot: queue %v, jobs_queued %v; want the training job alone", queue, n)
	}
	req(t, nc, "gpusched.job.cancel", `{"job_id":"`+other+`"}`)
	waitState(t, nc, id, "running", 5*time.Second)
}

// TestATrainingRoundAllocatesAroundOtherJobs: an ordinary job holds a GPU
// of node-0; the round places a four-replica job on node-1, whose four
// GPUs are free, and it runs at the first round. Before, the model
// counted every GPU as its own: Tiresias took node-0 (the first of two
// nodes of four free GPUs), found one held there, and the job waited
// round after round.
func TestATrainingRoundAllocatesAroundOtherJobs(t *testing.T) {
	nc := trainingCluster(t, cluster.Config{Timing: cluster.Timing{Speed: 600}}, time.Time{})
	other := submit(t, nc, `{"name":"eval","vram":"4GB","duration":"100h","gpu":"gpu-0"}`)
	waitState(t, nc, other, "running", 5*time.Second)
	id := submit(t, nc, `{"name":"cifar-4","training":{"app":"cifar10","batch":512,"replicas":4}}`)
	j := waitState(t, nc, id, "running", 5*time.Second)
	var gpus []string
	for _, g := range j["gpu_ids"].([]any) {
		gpus = append(gpus, g.(string))
	}
	if slices.Sort(gpus); !slices.Equal(gpus, []string{"gpu-4", "gpu-5", "gpu-6", "gpu-7"}) {
		t.Fatalf("the training job runs on %v; want node-1's four GPUs", gpus)
	}
	if st := j["training_state"].(obj); st["restarts"].(float64) != 0 {
		t.Fatalf("training state %v: want no restart", st)
	}
}

// TestATrainingJobThatLostAReplicaWhileNoSchedulerWatchedRunsAgain: the
// scheduler is killed, and while it is down one GPU of a six-replica job
// crashes. The restarted scheduler reads the job back on five GPUs of
// six: it stops it there and the next round allocates it again (no
// allocation kept from the read-back), from the model state the journal
// kept, and it completes. Before, the GPU that lost it was read first and
// the job went on from a model state of nothing: its progress was lost.
func TestATrainingJobThatLostAReplicaWhileNoSchedulerWatchedRunsAgain(t *testing.T) {
	nc := trainingCluster(t, cluster.Config{Hardware: cluster.Hardware{RestartBackoff: 300 * time.Millisecond}, Timing: cluster.Timing{Speed: 600}, Durability: cluster.Durability{Store: durable.Memory}}, time.Time{})
	id := submit(t, nc, `{"name":"cifar-6","training":{"app":"cifar10","batch":768,"replicas":6}}`)
	j := waitState(t, nc, id, "running", 5*time.Second)
	gpus := j["gpu_ids"].([]any)
	firstAlloc := j["training_state"].(obj)["first_alloc_s"]
	if rep := req(t, nc, "gpusched.chaos.kill-scheduler", `{}`); rep["ok"] != true {
		t.Fatalf("kill-scheduler: %v", rep)
	}
	if rep := req(t, nc, "gpusched.chaos.kill", `{"gpu":"`+gpus[len(gpus)-1].(string)+`"}`); rep["ok"] != true {
		t.Fatalf("kill %v: %v", gpus[len(gpus)-1], rep)
	}
	waitFor(t, "the restarted scheduler to know the job", 5*time.Second, func() bool {
		j := tryReq(nc, "gpusched.job.get", `{"job_id":"`+id+`"}`)
		return j != nil && j["state"] != nil
	})
	j = waitState(t, nc, id, "completed", 30*time.Second)
	st, _ := j["training_state"].(obj)
	// Its model state came over (from the journal: the GPU that lost it
	// says only that it did): its first allocation, and a restart since.
	if st == nil || st["done"] != true || st["restarts"].(float64) < 1 || st["first_alloc_s"] != firstAlloc || len(j["gpu_ids"].([]any)) != 6 {
		t.Fatalf("completed on %v with training state %v; want on six GPUs, first allocated at %v s, restarted at least once",
			j["gpu_ids"], st, firstAlloc)
	}
}

// trainingCluster starts a cluster of two nodes of four A100s that runs
// training jobs under Tiresias (the Pollux model from the traces: the
// test skips without them), a round every simulated minute from origin
// (zero: now), with cfg's other settings.
func trainingCluster(t *testing.T, cfg cluster.Config, origin time.Time) *nats.Conn {
	t.Helper()
	m, err := pollux.Load(tracedir.Pollux(t))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := pollux.NewPolicy("tiresias")
	if origin.IsZero() {
		origin = time.Now()
	}
	cfg.StarvationAge = 1000 * time.Hour
	cfg.Shape = sim.PolluxShape(pollux.Cluster{Nodes: 2, GPUsPerNode: 4})
	cfg.Training = &core.TrainingConfig{Model: m, Policy: p, Interval: time.Minute, Origin: origin}
	_, nc := startCluster(t, cfg)
	return nc
}

// subscribeReleases records the GPU statuses that say a job was released
// there; the function it returns lists those of job id ("" if none).
func subscribeReleases(t *testing.T, nc *nats.Conn) func(id string) string {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	sub, err := nc.Subscribe("gpusched.evt.gpu.*.*.status", func(m *nats.Msg) {
		var ev struct {
			Data struct {
				GPU    string `json:"gpu"`
				Change string `json:"change"`
				JobID  string `json:"job_id"`
			} `json:"data"`
		}
		if json.Unmarshal(m.Data, &ev) == nil && ev.Data.Change == events.ChangeReleased {
			mu.Lock()
			seen = append(seen, ev.Data.JobID+" on "+ev.Data.GPU)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func(id string) string {
		nc.Flush()
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, s := range seen {
			if strings.HasPrefix(s, id+" ") {
				out = append(out, s)
			}
		}
		return strings.Join(out, ", ")
	}
}

// TestAHigherPriorityJobPreemptsAWholeTrainingJob: a Tiresias job of
// eight replicas holds the whole cluster; a high-priority job that fits
// nowhere else takes one of its GPUs. The training job stops on all eight
// (a replica alone cannot go on) and waits, queued, for a round that has
// eight GPUs for it. Submitted with "preemptible": false it is left alone
// and the high-priority job waits instead (docs/POLICIES.md, "Training
// rounds").
func TestAHigherPriorityJobPreemptsAWholeTrainingJob(t *testing.T) {
	for _, preemptible := range []bool{true, false} {
		t.Run(fmt.Sprintf("preemptible=%v", preemptible), func(t *testing.T) {
			nc := trainingCluster(t, cluster.Config{Timing: cluster.Timing{Speed: 600}}, time.Time{})
			id := submit(t, nc, fmt.Sprintf(`{"name":"cifar-8","preemptible":%v,"training":{"app":"cifar10","batch":1024,"replicas":8}}`, preemptible))
			waitState(t, nc, id, "running", 5*time.Second)
			high := submit(t, nc, `{"name":"urgent","priority":"high","vram":"4GB","duration":"100h"}`)
			if !preemptible {
				// The pass that found no victim says why the job waits.
				waitFor(t, "the high-priority job to say why it waits", 5*time.Second, func() bool {
					j := tryReq(nc, "gpusched.job.get", `{"job_id":"`+high+`"}`)
					r, _ := j["reason"].(string)
					return j["state"] == "queued" && r != ""
				})
				j := req(t, nc, "gpusched.job.get", `{"job_id":"`+id+`"}`)
				if j["state"] != "running" || j["preemptions"] != 0.0 || len(j["gpu_ids"].([]any)) != 8 {
					t.Fatalf("the training job that may not be preempted is %v on %v after %v preemptions; want running on 8 GPUs, none",
						j["state"], j["gpu_ids"], j["preemptions"])
				}
				return
			}
			waitState(t, nc, high, "running", 5*time.Second)
			var j obj
			waitFor(t, "the training job to wait for eight GPUs again", 5*time.Second, func() bool {
				j = tryReq(nc, "gpusched.job.get", `{"job_id":"`+id+`"}`)
				r, _ := j["reason"].(string)
				return j["state"] == "queued" && strings.Contains(r, "asks for 8 replicas and 7 of the cluster's 8 GPUs")
			})
			if ids, _ := j["gpu_ids"].([]any); j["preemptions"] != 1.0 || len(ids) != 0 {
				t.Fatalf("the preempted training job: %v preemptions, on %v; want 1, on no GPU", j["preemptions"], j["gpu_ids"])
			}
			req(t, nc, "gpusched.job.cancel", `{"job_id":"`+high+`"}`)
			j = waitState(t, nc, id, "running", 5*time.Second)
			if st := j["training_state"].(obj); st["restarts"].(float64) < 1 || len(j["gpu_ids"].([]any)) != 8 {
				t.Fatalf("running again on %v with training state %v; want on 8 GPUs, a restart charged", j["gpu_ids"], st)
			}
		})
	}
}

// TestATenantLimitBoundsTrainingReplicas (issue 42 item 4): a tenant
// bounded to 2 GPUs runs one 2-replica training job, not two: the
// round's second allocation is not placed, and that job waits saying the
// tenant's limit stops it; another tenant's job runs.
func TestATenantLimitBoundsTrainingReplicas(t *testing.T) {
	limits, err := policy.ParseTenantLimits("team-a=gpus:2")
	if err != nil {
		t.Fatal(err)
	}
	nc := trainingCluster(t, cluster.Config{Admission: cluster.Admission{TenantLimits: limits}, Timing: cluster.Timing{Speed: 600}}, time.Time{})
	a1 := submit(t, nc, `{"name":"a1","tenant":"team-a","training":{"app":"ncf","batch":32768,"replicas":2}}`)
	a2 := submit(t, nc, `{"name":"a2","tenant":"team-a","training":{"app":"ncf","batch":32768,"replicas":2}}`)
	b := submit(t, nc, `{"name":"b","tenant":"team-b","training":{"app":"ncf","batch":32768,"replicas":2}}`)
	waitState(t, nc, b, "running", 20*time.Second)
	var first, second obj
	waitFor(t, "one team-a job running and the other waiting on the tenant's limit", 20*time.Second, func() bool {
		first, second = getJob(t, nc, a1), getJob(t, nc, a2)
		if first["state"] != "running" {
			first, second = second, first
		}
		r, _ := second["reason"].(string)
		return first["state"] == "running" && second["state"] == "queued" && strings.Contains(r, "allocated it 2 GPUs")
	})
	if r := second["reason"].(string); !strings.Contains(r, "team-a") {
		t.Errorf("the waiting job's reason %q does not name its tenant's limit", r)
	}
}
