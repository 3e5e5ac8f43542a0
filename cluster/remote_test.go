package cluster_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/node"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/simclock"
)

// TestNodeJoinsAndLeavesAControlPlane runs a control plane without GPUs
// and a GPU node on its own connection (what `cluster node` runs): a job
// submitted before any GPU joined waits instead of being rejected; the
// scheduler announces the node (node.up, "joined") and runs the job on it;
// when the node stops, the scheduler declares it down within about a lease
// (node.down) and its GPUs dead, and the job goes back to the queue.
func TestNodeJoinsAndLeavesAControlPlane(t *testing.T) {
	lease := 600 * time.Millisecond
	c, nc := startCluster(t, cluster.Config{Hardware: cluster.Hardware{NoGPUs: true, Lease: lease, Heartbeat: lease / 6}, Timing: cluster.Timing{Speed: 60}})
	log := recordEvents(t, nc, "gpusched.evt.>")
	id := submit(t, nc, `{"name":"early","vram":"20GB","duration":"10h","checkpoint":"1m"}`)
	if j := getJob(t, nc, id); j["state"] != "queued" {
		t.Fatalf("a job submitted before any GPU joined is %v, want queued", j["state"])
	}
	stop := remoteNode(t, c, "rack2-node7", "rack2-node7-gpu-0", simclock.NewScaled(time.Now(), 60), lease/6, lease)
	defer stop()
	j := waitState(t, nc, id, "running", 5*time.Second)
	if g := j["gpu_ids"].([]any); len(g) != 1 || g[0] != "rack2-node7-gpu-0" {
		t.Fatalf("the job runs on %v, want the joined node's GPU", g)
	}
	waitFor(t, "the node.up event", 5*time.Second, func() bool { return len(log.find("gpusched.node.up", "rack2-node7")) > 0 })
	if ups := log.find("gpusched.node.up", "rack2-node7"); len(ups) != 1 || ups[0]["data"].(obj)["change"] != "joined" {
		t.Fatalf("node.up events %v, want one 'joined'", ups)
	}
	stop()
	left := time.Now()
	waitFor(t, "the scheduler to declare the node down", 5*lease, func() bool {
		return len(log.find("gpusched.node.down", "rack2-node7")) == 1
	})
	if d := time.Since(left); d > 3*lease {
		t.Fatalf("node declared down %s after it stopped, want about a lease (%s)", d, lease)
	}
	down := log.find("gpusched.node.down", "rack2-node7")[0]["data"].(obj)
	if down["change"] != "lease-expired" || !strings.Contains(down["reason"].(string), "no heartbeat") {
		t.Fatalf("node.down %v", down)
	}
	waitState(t, nc, id, "queued", 5*time.Second)
	s := req(t, nc, "gpusched.cluster.snapshot", `{}`)["summary"].(obj)
	if s["nodes_alive"].(float64) != 0 || s["gpus_alive"].(float64) != 0 {
		t.Fatalf("after the node left: %v nodes and %v GPUs alive, want 0", s["nodes_alive"], s["gpus_alive"])
	}
}

// TestRemoteNodeBesideLocalGPUs: a cluster process with GPUs of its own
// serves them through one shared Router (<p>.gpu.*.*.ctl); a node joining
// from elsewhere keeps its own subscriptions, and the Router must leave its
// messages alone. A job pinned to the remote GPU runs there, and one
// pinned to a local GPU runs here.
func TestRemoteNodeBesideLocalGPUs(t *testing.T) {
	c, nc := startCluster(t, cluster.Config{Timing: cluster.Timing{Speed: 60}})
	defer remoteNode(t, c, "far-node", "far-gpu-0", c.Clock, 0, 6*time.Second)()
	waitFor(t, "the remote node and GPU to join", 5*time.Second, func() bool {
		sum := req(t, nc, "gpusched.cluster.snapshot", `{"summary_only":true}`)["summary"].(obj)
		return sum["gpus_alive"].(float64) == 9 && sum["nodes_alive"].(float64) == 3
	})
	far := submit(t, nc, `{"name":"far","vram":"20GB","duration":"10h","gpu":"far-gpu-0"}`)
	near := submit(t, nc, `{"name":"near","vram":"20GB","duration":"10h","gpu":"gpu-7"}`)
	if j := waitState(t, nc, far, "running", 5*time.Second); j["gpu_ids"].([]any)[0] != "far-gpu-0" || j["node"] != "far-node" {
		t.Fatalf("the pinned job runs on %v/%v, want far-node/far-gpu-0", j["node"], j["gpu_ids"])
	}
	if j := waitState(t, nc, near, "running", 5*time.Second); j["gpu_ids"].([]any)[0] != "gpu-7" {
		t.Fatalf("the local job runs on %v, want gpu-7", j["gpu_ids"])
	}
}

// remoteNode runs a node of one A100-80GB on its own connection, with
// its own subscriptions (what `cluster node` runs); the returned stop
// stops it and waits for its actors (calling it twice is fine).
func remoteNode(t *testing.T, c *cluster.Cluster, id, gpu string, clock simclock.Clock, heartbeat, lease time.Duration) (stop func()) {
	t.Helper()
	hostConn, err := c.Client("remote-node")
	if err != nil {
		t.Fatal(err)
	}
	a100, err := model.LookupModel("A100-80GB")
	if err != nil {
		t.Fatal(err)
	}
	spec := model.NodeSpec{ID: id, CPU: 16, Memory: 64 * model.GiB, GPUs: []model.GPUSpec{{ID: gpu, Model: a100}}}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := node.Start(ctx, node.HostConfig{Spec: spec, Clock: clock, Subjects: events.NewSubjects(""),
		Conn: hostConn, Logger: zap.NewNop(), Heartbeat: heartbeat, Lease: lease})
	if err != nil {
		cancel()
		hostConn.Close()
		t.Fatal(err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			h.Wait()
			hostConn.Close()
		})
	}
}
