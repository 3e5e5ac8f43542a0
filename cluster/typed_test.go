package cluster_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/actors/jobgen"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/sim"
)

// smallTable is a throughput table in Gavel's shape, made for these
// tests: type A runs 10 steps/s alone on a V100 and 2 on a K80; B 5 on a
// V100 and not at all on a K80; packed on a V100, A keeps 6 and B 4.
const smallTable = `{
 "v100": {"('A', 1)": {"null": 10, "('B', 1)": [6, 4]},
          "('B', 1)": {"null": 5, "('A', 1)": [4, 6]}},
 "k80":  {"('A', 1)": {"null": 2},
          "('B', 1)": {"null": 0}}
}`

func loadSmallTable(t *testing.T) *model.ThroughputTable {
	t.Helper()
	table, err := model.ParseThroughputs([]byte(smallTable))
	if err != nil {
		t.Fatal(err)
	}
	return table
}

// TestATypedJobWithoutAThroughputTableIsRefused: a cluster started
// without a table refuses a typed job, naming job_type; one with it
// refuses what the table cannot run, naming the field.
func TestATypedJobWithoutAThroughputTableIsRefused(t *testing.T) {
	_, plain := startCluster(t, cluster.Config{Timing: cluster.Timing{Speed: 60}})
	rep := req(t, plain, "gpusched.job.submit", `{"name":"a","job_type":"A","steps":100}`)
	if e, _ := rep["error"].(obj); e == nil || e["field"] != "job_type" {
		t.Fatalf("reply %v, want an error naming job_type", rep)
	}
	shape, err := model.ParseGPUs("1xV100-16GB,1xK80-12GB")
	if err != nil {
		t.Fatal(err)
	}
	_, nc := startCluster(t, cluster.Config{Hardware: cluster.Hardware{Shape: shape, Throughputs: loadSmallTable(t)}, Timing: cluster.Timing{Speed: 60}})
	for body, field := range map[string]string{
		`{"name":"x","job_type":"C","steps":100}`:                                "job_type",
		`{"name":"x","job_type":"A"}`:                                            "steps",
		`{"name":"x","steps":100}`:                                               "job_type",
		`{"name":"x","job_type":"A","steps":0.5}`:                                "steps",
		`{"name":"x","job_type":"A","steps":100,"duration":"1h"}`:                "duration",
		`{"name":"x","job_type":"A","steps":100,"gpus":2}`:                       "gpus",
		`{"name":"x","job_type":"B","steps":100,"models":["K80-12GB"]}`:          "gpus",
		`{"name":"x","job_type":"A","steps":100,"checkpoint":"10m"}`:             "checkpoint",
		`{"name":"x","training":{"app":"ncf","batch":1,"replicas":1},"steps":1}`: "steps",
	} {
		rep := req(t, nc, "gpusched.job.submit", body)
		if e, _ := rep["error"].(obj); e == nil || e["field"] != field {
			t.Errorf("%s: reply %v, want an error naming %s", body, rep, field)
		}
	}
	id := submit(t, nc, `{"name":"a","job_type":"A","steps":60000}`)
	j := waitState(t, nc, id, "running", 5*time.Second)
	if j["job_type"] != "A" || j["steps"] != 60000.0 || j["duration"] != "" {
		t.Fatalf("job.get %v: want job_type A, steps 60000 and no duration", j)
	}
}

// TestTypedJobsRunAtTheTablesRates: on a virtual clock, typed jobs run
// at the table's rates for the model they land on and, packed on one
// GPU, at the pair's; an untyped job does not share a GPU with a typed
// one. Every time below follows from the table by hand.
func TestTypedJobsRunAtTheTablesRates(t *testing.T) {
	shape, err := model.ParseGPUs("1xV100-16GB,1xK80-12GB")
	if err != nil {
		t.Fatal(err)
	}
	body := func(v map[string]any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	arrivals := []jobgen.Arrival{
		// 1000 steps at 2/s on the K80: 500 s.
		{At: 0, Name: "a-k80", Body: body(map[string]any{"name": "a-k80", "job_type": "A", "steps": 1000, "models": []string{"K80-12GB"}})},
		// Packed on the V100: A at 6/s does its 600 steps in 100 s; B
		// runs 400 of its 1000 at 4/s meanwhile, then 600 alone at 5/s:
		// 120 s more, 220 s in all.
		{At: 0, Name: "a-packed", Body: body(map[string]any{"name": "a-packed", "job_type": "A", "steps": 600, "gpu_milli": 500, "models": []string{"V100-16GB"}})},
		{At: 0, Name: "b-packed", Body: body(map[string]any{"name": "b-packed", "job_type": "B", "steps": 1000, "gpu_milli": 500, "models": []string{"V100-16GB"}})},
		// Half a V100 is free after a-packed ends, but B holds the other
		// half: an untyped job waits for it to end.
		{At: time.Second, Name: "plain", Body: body(map[string]any{"name": "plain", "gpu_milli": 500, "duration": "10m", "models": []string{"V100-16GB"}})},
	}
	res, err := sim.Run(context.Background(), sim.Config{Shape: shape, Policy: "binpack", Arrivals: arrivals, Throughputs: loadSmallTable(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]sim.JobResult{}
	for _, j := range res.Jobs {
		got[j.Name] = j
	}
	for name, end := range map[string]float64{"a-k80": 500, "a-packed": 100, "b-packed": 220} {
		j := got[name]
		if j.State != "completed" || math.Abs(j.End-end) > 1e-6 || j.Start != 0 {
			t.Errorf("%s: %s, ran %v–%v s, want completed 0–%v s", name, j.State, j.Start, j.End, end)
		}
	}
	if j := got["plain"]; j.State != "completed" || j.Start < 220-1e-6 {
		t.Errorf("plain: %s, started at %v s, want after b-packed left the V100 at 220 s", j.State, j.Start)
	}
	if j := got["a-k80"]; j.WorkS != 1000 {
		t.Errorf("a-k80's work is %v, want 1000 steps", j.WorkS)
	}
}

// TestAGangRunsAtItsSlowestGPUsPace (issue 44): on GPUs that carry their
// own pace per application class (model.GPUSpec.Variability), a job of
// that class runs at the pace of the slowest GPU of its gang; a job of
// another class, or of none, at the model's. Times follow by hand.
func TestAGangRunsAtItsSlowestGPUsPace(t *testing.T) {
	shape, err := model.ParseGPUs("2xV100-16GB,2xV100-16GB")
	if err != nil {
		t.Fatal(err)
	}
	if len(shape.Nodes) != 2 {
		t.Fatalf("shape %+v: want two nodes", shape)
	}
	// node 0: one median GPU and one twice as slow for classA; node 1:
	// both 1.25× slower for classA.
	shape.Nodes[0].GPUs[0].Variability = map[string]float64{"classA": 1}
	shape.Nodes[0].GPUs[1].Variability = map[string]float64{"classA": 2}
	shape.Nodes[1].GPUs[0].Variability = map[string]float64{"classA": 1.25}
	shape.Nodes[1].GPUs[1].Variability = map[string]float64{"classA": 1.25}
	n0, n1 := shape.Nodes[0].ID, shape.Nodes[1].ID
	body := func(v map[string]any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	arrivals := []jobgen.Arrival{
		{At: 0, Name: "a-slow", Body: body(map[string]any{"name": "a-slow", "duration": "100s", "gpus": 2, "vram": "8GB", "perf_class": "classA", "node": n0})},
		{At: 0, Name: "a-n1", Body: body(map[string]any{"name": "a-n1", "duration": "100s", "gpus": 2, "vram": "8GB", "perf_class": "classA", "node": n1})},
		{At: 200 * time.Second, Name: "b-n0", Body: body(map[string]any{"name": "b-n0", "duration": "100s", "gpus": 2, "vram": "8GB", "perf_class": "classB", "node": n0})},
		{At: 200 * time.Second, Name: "plain-n1", Body: body(map[string]any{"name": "plain-n1", "duration": "100s", "gpus": 2, "vram": "8GB", "node": n1})},
	}
	res, err := sim.Run(context.Background(), sim.Config{Shape: shape, Policy: "binpack", Arrivals: arrivals})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]sim.JobResult{}
	for _, j := range res.Jobs {
		got[j.Name] = j
	}
	speed := shape.Nodes[0].GPUs[0].Model.Speed
	for name, ran := range map[string]float64{"a-slow": 200, "a-n1": 125, "b-n0": 100, "plain-n1": 100} {
		j := got[name]
		if want := ran / speed; j.State != "completed" || math.Abs(j.End-j.Start-want) > 1e-6 {
			t.Errorf("%s: %s, ran %v–%v s, want %v s", name, j.State, j.Start, j.End, want)
		}
	}
}

// TestTheSnapshotShowsEachGPUsPerformanceLevel (issue 44 item 4): on a
// cluster with a variability profile every GPU of the snapshot carries
// its multipliers (variability) and its performance level per class
// (perf_levels, 0 the fastest), and the snapshot how many levels each
// class has; without a profile neither appears.
func TestTheSnapshotShowsEachGPUsPerformanceLevel(t *testing.T) {
	shape, err := model.ParseGPUs("4xV100-16GB")
	if err != nil {
		t.Fatal(err)
	}
	if err := shape.SetVariability([]map[string]float64{{"classA": 0.9}, {"classA": 0.91}, {"classA": 1.0}, {"classA": 1.01}}); err != nil {
		t.Fatal(err)
	}
	_, nc := startCluster(t, cluster.Config{Hardware: cluster.Hardware{Shape: shape}})
	var snap struct {
		Counts map[string]int `json:"perf_level_counts"`
		GPUs   []struct {
			GPU         string             `json:"gpu"`
			Variability map[string]float64 `json:"variability"`
			Levels      map[string]int     `json:"perf_levels"`
		} `json:"gpus"`
	}
	waitFor(t, "the snapshot to show four GPUs' levels", 5*time.Second, func() bool {
		rep := req(t, nc, "gpusched.cluster.snapshot", `{}`)
		b, _ := json.Marshal(rep)
		return json.Unmarshal(b, &snap) == nil && len(snap.GPUs) == 4 && snap.Counts["classA"] == 2
	})
	want := map[float64]int{0.9: 0, 0.91: 0, 1.0: 1, 1.01: 1}
	for _, g := range snap.GPUs {
		if l, ok := g.Levels["classA"]; !ok || l != want[g.Variability["classA"]] {
			t.Errorf("%s: multiplier %v at level %v, want level %d", g.GPU, g.Variability["classA"], g.Levels, want[g.Variability["classA"]])
		}
	}
	_, plain := startCluster(t, cluster.Config{})
	rep := req(t, plain, "gpusched.cluster.snapshot", `{}`)
	b, _ := json.Marshal(rep)
	if strings.Contains(string(b), "perf_level") || strings.Contains(string(b), "variability") {
		t.Errorf("a cluster without a profile shows levels: %s", b)
	}
}
