package openb

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadNodesAndShape(t *testing.T) {
	path := writeFile(t, "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\n"+
		"openb-node-0000,64000,262144,2,P100\n"+
		"openb-node-0001,96000,393216,8,G2\n"+
		"openb-node-0002,32000,131072,0,\n")
	nodes, err := ReadNodes(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 || nodes[0].Model != "P100-16GB" || nodes[1].GPUs != 8 || nodes[2].Model != "" {
		t.Fatalf("nodes %+v", nodes)
	}
	shape, err := Shape(nodes)
	if err != nil {
		t.Fatal(err)
	}
	if shape.GPUCount() != 10 || shape.Nodes[1].GPUs[0].ID != "gpu-2" || shape.Nodes[0].CPU != 64 || len(shape.Nodes[2].GPUs) != 0 {
		t.Fatalf("shape %+v", shape)
	}
}

func TestReadPodsBothLayouts(t *testing.T) {
	full := writeFile(t, "openb_pod_list_x.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"+
		"p0,12000,16384,1,460,V100M16|V100M32,LS,Running,0,100,0\n"+
		"p1,4000,0,0,0,,BE,Pending,5,9,\n")
	pods, err := ReadPods(full)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 || pods[0].Milli != 460 || len(pods[0].Models) != 2 || pods[0].Models[1] != "V100-32GB" ||
		!pods[1].HasTimes || pods[1].Deletion != 9 || pods[1].GPUMilli() != 0 {
		t.Fatalf("pods %+v", pods)
	}
	short := writeFile(t, "openb_pod_list_multigpu50.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,8000,1024,8,1000\n")
	pods, err = ReadPods(short)
	if err != nil || len(pods) != 1 || pods[0].HasTimes || pods[0].GPUMilli() != 8000 {
		t.Fatalf("five-column file: %+v %v", pods, err)
	}
	if WorkloadName(short) != "openb_pod_list_multigpu50" {
		t.Fatalf("workload name %q", WorkloadName(short))
	}
}

// TestMalformedLinesAreRejectedWithTheirNumber: every bad line is named
// with its line number and column, and nothing is returned half-loaded.
func TestMalformedLinesAreRejectedWithTheirNumber(t *testing.T) {
	const podHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
	const good = "p0,1000,10,1,500\n"
	cases := []struct {
		name, body, want string
	}{
		{"pods.csv", podHeader + good + "p1,abc,10,1,500\n", ":3: column cpu_milli: \"abc\" is not an integer"},
		{"pods.csv", podHeader + good + good + "p1,1000,10,1\n", ":4: 4 fields, the header has 5"},
		{"pods.csv", podHeader + "p1,1000,10,2,500\n", ":2: column gpu_milli: 500 for a pod with num_gpu 2"},
		{"pods.csv", podHeader + "p1,1000,10,1,1500\n", ":2: column gpu_milli: 1500 is outside 0..1000"},
		{"pods.csv", podHeader + "p1,1000,-5,1,500\n", ":2: column memory_mib: -5 is outside"},
		{"pods.csv", "name,cpu\np0,1\n", ":1: header lacks column \"cpu_milli\""},
		{"pods.csv", podHeader + "p1,\"1000,10,1,500\n", ":2: "},
		{"nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1000,10,2,Z99\n", ":2: column model: unknown GPU model \"Z99\""},
		{"nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1000,10,2,T4\nn0,1000,10,2,T4\n", ":3: column sn: node \"n0\" appears twice"},
		{"nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn.0,1000,10,2,T4\n", ":2: column sn: \"n.0\" is not a node name"},
	}
	for _, c := range cases {
		path := writeFile(t, c.name, c.body)
		var err error
		var n int
		if strings.HasPrefix(c.name, "pods") {
			var pods []Pod
			pods, err = ReadPods(path)
			n = len(pods)
		} else {
			var nodes []Node
			nodes, err = ReadNodes(path)
			n = len(nodes)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: error %v, want it to name %s and contain %q", c.body, err, path, c.want)
		}
		if n != 0 {
			t.Errorf("%q: %d rows returned with an error", c.body, n)
		}
	}
	var le *LineError
	_, err := ReadPods(writeFile(t, "p.csv", podHeader+"p1,x,1,1,1\n"))
	if !errors.As(err, &le) || le.Line != 2 || le.Column != "cpu_milli" {
		t.Fatalf("error %v is not a LineError for line 2, cpu_milli", err)
	}
}
