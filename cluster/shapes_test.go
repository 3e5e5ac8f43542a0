package cluster_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/cluster"
)

func TestClusterFilesParse(t *testing.T) {
	shape, err := cluster.LoadShape(filepath.Join("..", "clusters", "mixed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(shape.Nodes) != 9 || shape.GPUCount() != 2*8+2*4+4*4 || shape.Nodes[0].ID != "a100-0" ||
		shape.Nodes[2].GPUs[0].Model.Name != "V100-32GB" || len(shape.Nodes[8].GPUs) != 0 || shape.Nodes[8].Labels["pool"] != "cpu" {
		t.Fatalf("mixed.yaml parsed as %+v", shape)
	}
	ref, err := cluster.LoadShape(filepath.Join("..", "clusters", "reference.yaml"))
	if err != nil || ref.GPUCount() != 8 || ref.Nodes[1].GPUs[1].ID != "gpu-7" {
		t.Fatalf("reference.yaml: %+v %v", ref, err)
	}
	csv := filepath.Join(t.TempDir(), "nodes.csv")
	os.WriteFile(csv, []byte("sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,64000,262144,2,P100\n"), 0o644)
	if s, err := cluster.LoadShape(csv); err != nil || s.GPUCount() != 2 || s.Nodes[0].ID != "openb-node-0000" {
		t.Fatalf("an openb node CSV as a cluster file: %+v %v", s, err)
	}
	for body, want := range map[string]string{
		"nodes: []": "no nodes",
		"nodes:\n  - cpu: 8\n    memory: 1GiB\n    gpus: 2xZ9":                                         "unknown GPU model",
		"nodes:\n  - cpu: 0\n    memory: 1GiB":                                                         "cpu must be a positive",
		"nodes:\n  - cpu: 8\n    memory: lots":                                                         `memory "lots"`,
		"nodes:\n  - cpu: 8\n    memory: 1GiB\n    gpu: 2":                                             "field gpu not found",
		"nodes:\n  - name: a\n    cpu: 8\n    memory: 1GiB\n  - name: a\n    cpu: 8\n    memory: 1GiB": `node "a" appears twice`,
	} {
		if _, err := cluster.ParseShapeYAML("c.yaml", []byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", body, err, want)
		}
	}
}

// TestTraceJobsOnAHeterogeneousCluster runs jobs as the trace has them on
// the mixed cluster file: GPU shares that add up on one GPU, a model
// constraint, a gang, and a CPU-only job that runs on a node and ends.
func TestTraceJobsOnAHeterogeneousCluster(t *testing.T) {
	shape, err := cluster.LoadShape(filepath.Join("..", "clusters", "mixed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, nc := startCluster(t, cluster.Config{Hardware: cluster.Hardware{Shape: shape}, Scheduling: cluster.Scheduling{Policy: "best-fit"}, Timing: cluster.Timing{Speed: 600}})
	// Two 460 shares fit one T4 together under best-fit (tightest GPU).
	a := submit(t, nc, `{"name":"share-a","gpu_milli":460,"cpu":4,"memory":"8GiB","duration":"10h","models":["T4"]}`)
	b := submit(t, nc, `{"name":"share-b","gpu_milli":460,"cpu":4,"memory":"8GiB","duration":"10h","models":["T4"]}`)
	ja, jb := waitState(t, nc, a, "running", 5*time.Second), waitState(t, nc, b, "running", 5*time.Second)
	if gpuIDs(ja) != gpuIDs(jb) || !strings.HasPrefix(ja["node"].(string), "t4-") {
		t.Fatalf("two 460 shares should share one T4: %s on %v, %s on %v", gpuIDs(ja), ja["node"], gpuIDs(jb), jb["node"])
	}
	// A third does not fit that GPU (920 + 460 > 1000): it goes elsewhere.
	c := submit(t, nc, `{"name":"share-c","gpu_milli":460,"cpu":4,"memory":"8GiB","duration":"10h","models":["T4"]}`)
	if jc := waitState(t, nc, c, "running", 5*time.Second); gpuIDs(jc) == gpuIDs(ja) {
		t.Fatalf("GPU %s holds 1380/1000", gpuIDs(jc))
	}
	// The GPU's status and the snapshot show the share held.
	snap := req(t, nc, "gpusched.cluster.snapshot", `{}`)
	var held float64
	for _, g := range snap["gpus"].([]any) {
		gm := g.(map[string]any)
		if gm["gpu"] == gpuIDs(ja) {
			held = gm["milli_used"].(float64)
		}
	}
	if held != 920 {
		t.Fatalf("snapshot shows %v milli used on %s, want 920", held, gpuIDs(ja))
	}
	sum := snap["summary"].(map[string]any)
	if sum["milli_used"].(float64) != 1380 || sum["workload_classes"].(float64) < 1 {
		t.Fatalf("summary %v", sum)
	}
	// A gang of 4 whole V100s lands on one V100 node.
	g := submit(t, nc, `{"name":"gang","gpus":4,"gpu_milli":1000,"cpu":16,"memory":"64GiB","duration":"10h","models":["V100-32GB"]}`)
	if jg := waitState(t, nc, g, "running", 5*time.Second); !strings.HasPrefix(jg["node"].(string), "v100-") || len(jg["gpu_ids"].([]any)) != 4 {
		t.Fatalf("gang placed on %v %v", jg["node"], jg["gpu_ids"])
	}
	// A CPU-only job holds CPU on a node, runs and completes (1h at speed
	// 600 is 6 s of wall time).
	cpu := submit(t, nc, `{"name":"etl","gpus":0,"cpu":60,"memory":"100GiB","duration":"1h"}`)
	jc := waitState(t, nc, cpu, "running", 5*time.Second)
	if jc["node"] == nil || jc["node"] == "" || jc["gpu_ids"] != nil {
		t.Fatalf("CPU-only job placed as %v", jc)
	}
	waitState(t, nc, cpu, "completed", 20*time.Second)
	// A job asking more CPU than any node has is rejected, naming cpu.
	rep := req(t, nc, "gpusched.job.submit", `{"name":"huge","gpus":0,"cpu":500,"duration":"1h"}`)
	if e, _ := rep["error"].(map[string]any); e == nil || e["field"] != "cpu" {
		t.Fatalf("a 500-core job: %v", rep)
	}
}
