package cluster_test

import (
	"strings"
	"testing"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/internal/livetest"
)

// TestANodeCannotClaimAGPUThisProcessRuns (issue 22 item 9: a heartbeat
// naming another node's GPU made chaos.hang fail "on 2 nodes"): far-node
// heartbeats gpu-0, one of the embedded cluster's own GPUs; the chaos
// responder still knows gpu-0 as node-0's and hangs it.
func TestANodeCannotClaimAGPUThisProcessRuns(t *testing.T) {
	s := livetest.SecureCluster(t, cluster.Config{})
	admin, far := s.As(t, "admin"), s.As(t, "far-node")
	hb := `{"data":{"node":"far-node","incarnation":1,"cpu_total":8,"memory_total":1000000000,"gpus":[{"gpu":"gpu-0","incarnation":9,"alive":true}]}}`
	for range 3 {
		if err := far.Publish("gpusched.evt.node.far-node.heartbeat", []byte(hb)); err != nil {
			t.Fatal(err)
		}
	}
	if err := far.Flush(); err != nil {
		t.Fatal(err)
	}
	// The claims are in the server before the request (flushed); the
	// responder hears heartbeats and requests on two subscriptions, so a
	// second request, after the first answer, comes well after them (3 of
	// 3 runs failed without the fix).
	ask(admin, "gpusched.chaos.delay", `{"gpu":"gpu-0","delay":"0s"}`)
	rep, err := ask(admin, "gpusched.chaos.hang", `{"gpu":"gpu-0","duration":"100ms"}`)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := rep["error"].(obj); e != nil {
		if strings.Contains(e["message"].(string), "nodes") {
			t.Fatalf("a foreign claim made gpu-0 ambiguous: %v", e)
		}
		t.Fatalf("hang gpu-0: %v", e)
	}
	if rep["ok"] != true {
		t.Fatalf("hang gpu-0: %v", rep)
	}
}
