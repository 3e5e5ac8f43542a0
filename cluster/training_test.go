package cluster_test

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/internal/tracedir"
	"github.com/gpusched/gpusched/pollux"
	"github.com/gpusched/gpusched/sim"
)

// TestATrainingJobWithoutATrainingClusterIsRefused: a cluster started
// without a Pollux model refuses a training job, naming the field.
func TestATrainingJobWithoutATrainingClusterIsRefused(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Speed: 60})
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
	m, err := pollux.Load(tracedir.Pollux(t))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := pollux.NewPolicy("tiresias")
	_, nc := startCluster(t, cluster.Config{Speed: 600, StarvationAge: 1000 * time.Hour, Shape: sim.PolluxShape(pollux.Cluster{Nodes: 2, GPUsPerNode: 4}),
		Training: &core.TrainingConfig{Model: m, Policy: p, Interval: time.Minute, Origin: time.Now()}})
	for body, field := range map[string]string{
		`{"name":"x","training":{"app":"gpt9","batch":384,"replicas":2}}`:                  "training.app",
		`{"name":"x","training":{"app":"ncf","batch":1,"replicas":2}}`:                     "training.batch",
		`{"name":"x","training":{"app":"ncf","batch":32768,"replicas":0}}`:                 "training.replicas",
		`{"name":"x","duration":"1h","training":{"app":"ncf","batch":32768,"replicas":1}}`: "duration",
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
