// Package tracedir finds the public traces for tests and benchmarks (the
// openb trace, the Pollux, Gavel and PAL artifacts' data): in
// $GPUSCHED_TRACES, or in ../shared/traces beside the repository (where
// CI has it). Never copy the trace into the project.
package tracedir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpusched/gpusched/openb"
)

// candidates are the folders that may hold the traces: $GPUSCHED_TRACES,
// then shared/traces beside the repository (found from the test's folder
// by walking up to go.mod, whatever the package's depth).
func candidates() []string {
	var out []string
	if d := os.Getenv("GPUSCHED_TRACES"); d != "" {
		out = append(out, d)
	}
	dir, err := os.Getwd()
	for err == nil {
		if _, statErr := os.Stat(filepath.Join(dir, "go.mod")); statErr == nil {
			return append(out, filepath.Join(dir, "..", "shared", "traces"))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return out
}

// Openb returns the alibaba-openb folder of the trace, or skips t with a
// message saying where to get it.
func Openb(t testing.TB) string {
	t.Helper()
	return find(t, "alibaba-openb", "openb_node_list_gpu_node.csv", "the openb trace is not here: put it in ../shared/traces/alibaba-openb or set GPUSCHED_TRACES "+
		"(github.com/alibaba/clusterdata, cluster-trace-gpu-v2023, with the FGD results from hkust-adsl/kubernetes-scheduler-simulator)")
}

// Pollux returns the Pollux artifact's data folder (workloads*/, traces/,
// results-jobload/, MODEL.md), or skips t with a message saying where to
// get it.
func Pollux(t testing.TB) string {
	t.Helper()
	return find(t, "pollux", "MODEL.md", "the Pollux data is not here: put it in ../shared/traces/pollux or set GPUSCHED_TRACES "+
		"(github.com/petuum/adaptdl, branch osdi21-artifact, simulator/: workloads*/, traces/, results-jobload/, with MODEL.md)")
}

// Gavel returns the Gavel artifact's data folder (data/, runs/,
// MODEL.md), or skips t with a message saying where to get it.
func Gavel(t testing.TB) string {
	t.Helper()
	return find(t, "gavel", "MODEL.md", "the Gavel data is not here: put it in ../shared/traces/gavel or set GPUSCHED_TRACES "+
		"(github.com/stanford-futuredata/gavel: scheduler/simulation_throughputs.json and job_table.py, with MODEL.md and the reference runs/)")
}

// PAL returns the PAL artifact's data folder (data/, runs/, MODEL.md),
// or skips t with a message saying where to get it.
func PAL(t testing.TB) string {
	t.Helper()
	return find(t, "pal", "MODEL.md", "the PAL data is not here: put it in ../shared/traces/pal or set GPUSCHED_TRACES "+
		"(github.com/hal-uw/blox-pal, branch artifact: workload-traces/philly/, aggregated_data/sim/, profiles.json, with MODEL.md and the reference runs/)")
}

// find returns the folder sub of the traces that holds marker, or skips t
// saying why.
func find(t testing.TB, sub, marker, why string) string {
	t.Helper()
	for _, d := range candidates() {
		p := filepath.Join(d, sub)
		if _, err := os.Stat(filepath.Join(p, marker)); err == nil {
			return p
		}
	}
	t.Skip(why)
	return ""
}

// Default reads the openb GPU node list and the default pod list, or
// skips t when the trace is absent; a file that does not read fails t.
func Default(t testing.TB) ([]openb.Node, []openb.Pod) {
	t.Helper()
	return Workload(t, "openb_pod_list_default.csv")
}

// Workload is Default with another of the trace's pod lists (its file
// name, e.g. "openb_pod_list_gpushare100.csv").
func Workload(t testing.TB, pods string) ([]openb.Node, []openb.Pod) {
	t.Helper()
	dir := Openb(t)
	nodes, err := openb.ReadNodes(filepath.Join(dir, "openb_node_list_gpu_node.csv"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := openb.ReadPods(filepath.Join(dir, pods))
	if err != nil {
		t.Fatal(err)
	}
	return nodes, list
}
