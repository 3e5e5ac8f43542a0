package cluster_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/bus"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/simclock"
)

// TestASecondControlPlaneDeposesTheFirst (issue 43 item 4, fencing): a
// control plane leads the store on an external bus; a second one started
// on the same store (not as a standby) takes it over. The first learns it
// at its next renewal — the store refuses its fenced write — and stops
// (sched.down, "deposed"); every job submitted afterwards is placed by the
// second one's scheduler alone, so two schedulers never place at once.
func TestASecondControlPlaneDeposesTheFirst(t *testing.T) {
	ns, _ := testbus.StartJetStream(t)
	const lease = 900 * time.Millisecond
	cfg := cluster.Config{Access: cluster.Access{Bus: bus.Options{URLs: ns.ClientURL()}}, Hardware: cluster.Hardware{NoGPUs: true, Lease: lease, Heartbeat: lease / 6}, Timing: cluster.Timing{Speed: 60}, Durability: cluster.Durability{Store: durable.File}}
	first, nc := startCluster(t, cfg)
	stop := remoteNode(t, first, "box", "box-gpu-0", simclock.NewScaled(time.Now(), 60), lease/6, lease)
	defer stop()
	var mu sync.Mutex
	var downs []events.SchedLifecycle
	placedBy := map[string]int{}
	if _, err := nc.Subscribe("gpusched.evt.>", func(m *nats.Msg) {
		ev, fe := events.DecodeEvent(m.Data)
		if fe != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.HasSuffix(ev.Type, "sched.down"):
			var l events.SchedLifecycle
			json.Unmarshal(ev.Data, &l)
			downs = append(downs, l)
		case strings.HasSuffix(ev.Type, "job.placed"):
			placedBy[ev.Source]++
		}
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	id := submit(t, nc, `{"name":"before","vram":"10GB","util":20,"duration":"10h"}`)
	waitState(t, nc, id, "running", 5*time.Second)

	startCluster(t, cfg) // the second control plane: it leads from now on
	waitFor(t, "the first control plane to learn it was deposed", 5*lease, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range downs {
			if strings.Contains(d.Reason, "deposed") {
				return true
			}
		}
		return false
	})
	mu.Lock()
	clear(placedBy)
	mu.Unlock()
	var ids []string
	for range 4 {
		ids = append(ids, submit(t, nc, `{"name":"after","vram":"10GB","util":20,"duration":"1m"}`))
	}
	for _, id := range ids {
		if !testbus.Await(20*time.Second, func() bool { return getJob(t, nc, id)["state"] == "completed" }) {
			snap := req(t, nc, "gpusched.cluster.snapshot", `{}`)
			t.Fatalf("job %s: %v\nsnapshot: %v", id, getJob(t, nc, id), snap)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(placedBy) != 1 {
		t.Fatalf("after the take-over jobs were placed by %v, want one scheduler alone", placedBy)
	}
}
