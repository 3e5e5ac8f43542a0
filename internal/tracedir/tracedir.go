// Package tracedir finds the openb trace for tests and benchmarks: in
// $GPUSCHED_TRACES, or in ../shared/traces beside the repository (where
// CI has it). Never copy the trace into the project.
package tracedir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpusched/gpusched/openb"
)

// Openb returns the alibaba-openb folder of the trace, or skips t with a
// message saying where to get it.
func Openb(t testing.TB) string {
	t.Helper()
	for _, d := range []string{os.Getenv("GPUSCHED_TRACES"), filepath.Join("..", "..", "shared", "traces"), filepath.Join("..", "shared", "traces")} {
		if d == "" {
			continue
		}
		p := filepath.Join(d, "alibaba-openb")
		if _, err := os.Stat(filepath.Join(p, "openb_node_list_gpu_node.csv")); err == nil {
			return p
		}
	}
	t.Skip("the openb trace is not here: put it in ../shared/traces/alibaba-openb or set GPUSCHED_TRACES " +
		"(github.com/alibaba/clusterdata, cluster-trace-gpu-v2023, with the FGD results from hkust-adsl/kubernetes-scheduler-simulator)")
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
