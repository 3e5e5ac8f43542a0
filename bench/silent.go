package bench

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
)

// SilentNodeResult is what a node naming GPUs that never answer costs
// the others: the latency of the requests answered meanwhile, and how
// many GPUs of the real nodes went down (their leases lapsed).
type SilentNodeResult struct {
	Latencies    Latencies
	HealthyDowns int64
	// Asked is how many describes the silent node received.
	Asked int64
}

// SilentNode has a node of c, "silent", heartbeat every period for d
// naming gpus GPU ids it never describes (it subscribes to their control
// subjects and never answers), while nc asks for the cluster's summary
// every 10 ms. Model: a node process whose GPU actors hang, or a node's
// credentials in the wrong hands (docs/SECURITY.md).
func SilentNode(c *cluster.Cluster, nc *nats.Conn, gpus int, period, d time.Duration) (SilentNodeResult, error) {
	var res SilentNodeResult
	sj := events.NewSubjects("")
	silent, err := nats.Connect(c.URL())
	if err != nil {
		return res, err
	}
	defer silent.Close()
	var asked, downs atomic.Int64
	if _, err := silent.Subscribe(sj.NodeGPUs("silent"), func(*nats.Msg) { asked.Add(1) }); err != nil {
		return res, err
	}
	watch, err := nats.Connect(c.URL())
	if err != nil {
		return res, err
	}
	defer watch.Close()
	if _, err := watch.Subscribe(sj.AllGPUEvents(), func(m *nats.Msg) {
		if node, _, typ, ok := events.ParseGPUEvent(m.Subject); ok && typ == events.GPUDown && node != "silent" {
			downs.Add(1)
		}
	}); err != nil {
		return res, err
	}
	if err := watch.Flush(); err != nil {
		return res, err
	}
	ids := make([]events.HeartbeatGPU, gpus)
	for i := range ids {
		ids[i] = events.HeartbeatGPU{GPU: fmt.Sprintf("silent-gpu-%d", i), Incarnation: 1, Alive: true}
	}
	emit := events.NewEmitter(silent, "/node/silent/1")
	beat := func(n int) error {
		return emit.Emit(sj.NodeHeartbeat("silent"), events.Type("node", "heartbeat"), "silent", time.Now(),
			events.NodeHeartbeat{Node: "silent", Incarnation: 1, CPUTotal: 64, MemoryTotal: 1 << 38, GPUs: ids, Beat: uint64(n)})
	}
	start, next, n := time.Now(), time.Now(), 0
	for time.Since(start) < d {
		if !time.Now().Before(next) {
			n++
			if err := beat(n); err != nil {
				return res, err
			}
			next = next.Add(period)
		}
		sent := time.Now()
		if _, err := nc.Request(sj.ClusterSnapshot(), []byte(`{"summary_only":true}`), 10*time.Second); err != nil {
			return res, fmt.Errorf("a request while a node names %d silent GPUs: %w", gpus, err)
		}
		res.Latencies = append(res.Latencies, time.Since(sent))
		time.Sleep(10 * time.Millisecond)
	}
	res.HealthyDowns, res.Asked = downs.Load(), asked.Load()
	res.Latencies = res.Latencies.sorted() // P reads a sorted list
	return res, nil
}
