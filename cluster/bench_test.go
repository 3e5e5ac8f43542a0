package cluster_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/internal/testbus"
)

// benchJob fits anywhere and never ends during a benchmark, so placement,
// not capacity, is measured; no CPU or memory, so nodes never run short.
const benchJob = `{"name":"bench","priority":"medium","vram":"1GiB","util":1,"duration":"1000h","cpu":0,"memory":0}`

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// submitPlaced submits benchJob and returns the latency and the job id.
func submitPlaced(b *testing.B, nc *nats.Conn) (time.Duration, string) {
	start := time.Now()
	msg, err := nc.Request("gpusched.job.submit", []byte(benchJob), 5*time.Second)
	lat := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	var rep struct {
		JobID string `json:"job_id"`
		State string `json:"state"`
	}
	json.Unmarshal(msg.Data, &rep)
	if rep.State != "placed" {
		b.Fatalf("submit reply %s, want placed", msg.Data)
	}
	return lat, rep.JobID
}

func cancel(b *testing.B, nc *nats.Conn, id string) {
	if _, err := nc.Request("gpusched.job.cancel", []byte(`{"job_id":"`+id+`"}`), 5*time.Second); err != nil {
		b.Fatal(err)
	}
}

// benchStores are the job journal's storages the benchmarks compare: no
// JetStream ("none", --memory's predecessor: nothing survives), JetStream
// in memory (--memory) and on disk (the default).
var benchStores = []durable.Storage{durable.None, durable.Memory, durable.File}

func storeName(st durable.Storage) string {
	if st == durable.None {
		return "none"
	}
	return string(st)
}

// benchConfig is cfg keeping its state in st.
func benchConfig(b *testing.B, cfg cluster.Config, st durable.Storage) cluster.Config {
	cfg.Store = st
	if st == durable.File {
		cfg.DataDir = b.TempDir()
	}
	return cfg
}

// BenchmarkSubmitToPlaced measures submit→placed latency through the
// whole path (client over loopback TCP → NATS → scheduler → node and GPU
// actors reserve and commit → the job's record stored in the journal →
// reply) on the idle reference cluster, for each policy and each store.
// Each job is cancelled after it is placed (outside the measured latency)
// so the cluster stays idle.
func BenchmarkSubmitToPlaced(b *testing.B) {
	for _, policy := range []string{"binpack", "spread"} {
		for _, st := range benchStores {
			b.Run(policy+"/store="+storeName(st), func(b *testing.B) {
				_, nc := startCluster(b, benchConfig(b, cluster.Config{Policy: policy}, st))
				lats := make([]time.Duration, 0, b.N)
				var total time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					lat, id := submitPlaced(b, nc)
					lats = append(lats, lat)
					total += lat
					cancel(b, nc, id)
				}
				b.StopTimer()
				sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
				b.ReportMetric(float64(percentile(lats, 0.50).Microseconds()), "p50-µs")
				b.ReportMetric(float64(percentile(lats, 0.99).Microseconds()), "p99-µs")
				b.ReportMetric(float64(b.N)/total.Seconds(), "placements/s")
			})
		}
	}
}

// BenchmarkPlacementThroughput submits from several clients at once and
// reports placements per second for each store (each client cancels what
// it placed, and that time counts too, so the figure is a floor).
func BenchmarkPlacementThroughput(b *testing.B) {
	for _, st := range benchStores {
		b.Run("store="+storeName(st), func(b *testing.B) {
			c, _ := startCluster(b, benchConfig(b, cluster.Config{}, st))
			var placed atomic.Int64
			const clients = 8
			conns := make([]*nats.Conn, clients)
			for i := range conns {
				nc, err := nats.Connect(c.URL())
				if err != nil {
					b.Fatal(err)
				}
				defer nc.Close()
				conns[i] = nc
			}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			per := (b.N + clients - 1) / clients
			for i := 0; i < clients; i++ {
				wg.Go(func() {
					for k := 0; k < per; k++ {
						_, id := submitPlaced(b, conns[i])
						placed.Add(1)
						cancel(b, conns[i], id)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(placed.Load())/time.Since(start).Seconds(), "placements/s")
		})
	}
}

// BenchmarkBusRequestReply is the raw bus on this machine with the same
// payload, for the ratio: a NATS request-reply round trip over loopback TCP
// to an echo responder.
func BenchmarkBusRequestReply(b *testing.B) {
	_, nc := testbus.Start(b)
	responder, err := nats.Connect(nc.ConnectedUrl())
	if err != nil {
		b.Fatal(err)
	}
	defer responder.Close()
	reply := []byte(`{"job_id":"3f97a168-d8d0-4719-b4cf-aead2a82fbab","state":"placed"}`)
	sub, _ := responder.Subscribe("echo", func(m *nats.Msg) { m.Respond(reply) })
	defer sub.Unsubscribe()
	responder.Flush()
	lats := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := nc.Request("echo", []byte(benchJob), 5*time.Second); err != nil {
			b.Fatal(err)
		}
		lats = append(lats, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	b.ReportMetric(float64(percentile(lats, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lats, 0.99).Microseconds()), "p99-µs")
	_ = fmt.Sprint
}
