package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// ClusterOptions is a cluster for the whole-path measures.
type ClusterOptions struct {
	// GPUs is "6xA100-40GB,2xA100-80GB" (the reference) or "1000xA100-80GB".
	GPUs   string
	Policy string
	Store  durable.Storage
	// DataDir is where a file store keeps its files (a temp dir).
	DataDir string
}

// StartCluster starts an idle cluster (no job generator) on a random
// loopback port.
func StartCluster(ctx context.Context, o ClusterOptions) (*cluster.Cluster, error) {
	shape, err := model.ParseGPUs(o.GPUs)
	if err != nil {
		return nil, err
	}
	return cluster.Start(ctx, cluster.Config{Listen: "127.0.0.1:-1", Shape: shape, Policy: o.Policy, Speed: 1,
		Store: o.Store, DataDir: o.DataDir, Fresh: true, Logger: zap.NewNop()})
}

// Client connects to c in-process (no socket) or over loopback TCP.
func Client(c *cluster.Cluster, tcp bool) (*nats.Conn, error) {
	if tcp {
		return nats.Connect(c.URL(), nats.Name("gpusched-bench"))
	}
	return c.Client("bench")
}

// submitReply is what the measures read of a submit reply.
type submitReply struct {
	JobID string `json:"job_id"`
	State string `json:"state"`
}

// SubmitLatency submits n jobs one at a time on an idle cluster and
// returns each submit→placed latency; each job is cancelled after it is
// placed, outside the measured time, so the cluster stays idle.
func SubmitLatency(nc *nats.Conn, n int) (Latencies, error) {
	subjects := events.NewSubjects("")
	lats := make(Latencies, 0, n)
	for i := 0; i < n+n/10; i++ {
		start := time.Now()
		msg, err := nc.Request(subjects.JobSubmit(), []byte(submitBody), 5*time.Second)
		lat := time.Since(start)
		if err != nil {
			return nil, fmt.Errorf("submit: %w", err)
		}
		var rep submitReply
		if err := json.Unmarshal(msg.Data, &rep); err != nil || rep.State != events.JobPlaced {
			return nil, fmt.Errorf("submit reply %s, want placed", msg.Data)
		}
		if i >= n/10 {
			lats = append(lats, lat)
		}
		if _, err := nc.Request(subjects.JobCancel(), []byte(`{"job_id":"`+rep.JobID+`"}`), 5*time.Second); err != nil {
			return nil, fmt.Errorf("cancel: %w", err)
		}
	}
	return lats.sorted(), nil
}

// Pipelined sends n requests to subject with at most window in flight (as
// many clients at once would) and returns the replies in order and the
// time until the last arrived.
func Pipelined(nc *nats.Conn, subject string, bodies func(i int) []byte, n, window int) ([][]byte, time.Duration, error) {
	inbox := nats.NewInbox()
	replies := make(chan *nats.Msg, window)
	sub, err := nc.ChanSubscribe(inbox+".*", replies)
	if err != nil {
		return nil, 0, err
	}
	defer sub.Unsubscribe()
	sub.SetPendingLimits(-1, -1)
	out := make([][]byte, n)
	start := time.Now()
	sent, got := 0, 0
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for got < n {
		for sent < n && sent-got < window {
			if err := nc.PublishRequest(subject, inbox+"."+strconv.Itoa(sent), bodies(sent)); err != nil {
				return nil, 0, err
			}
			sent++
		}
		select {
		case m := <-replies:
			i, err := strconv.Atoi(m.Subject[len(inbox)+1:])
			if err != nil || i < 0 || i >= n || out[i] != nil {
				continue
			}
			out[i] = m.Data
			got++
			timeout.Reset(10 * time.Second)
		case <-timeout.C:
			return nil, 0, fmt.Errorf("%d of %d requests on %s unanswered after 10s", n-got, n, subject)
		}
	}
	return out, time.Since(start), nil
}

// Throughput submits rounds×perRound jobs, perRound at a time with window
// in flight, and returns placements per second over the submitting time.
// With cancel, each round's jobs are cancelled after it (not timed), so a
// small cluster never fills.
func Throughput(nc *nats.Conn, rounds, perRound, window int, cancel bool) (float64, error) {
	subjects := events.NewSubjects("")
	var busy time.Duration
	placed := 0
	for round := 0; round < rounds; round++ {
		replies, took, err := Pipelined(nc, subjects.JobSubmit(), func(int) []byte { return []byte(submitBody) }, perRound, window)
		if err != nil {
			return 0, err
		}
		busy += took
		ids := make([]string, 0, len(replies))
		for _, b := range replies {
			var rep submitReply
			if err := json.Unmarshal(b, &rep); err != nil || rep.State != events.JobPlaced {
				return 0, fmt.Errorf("submit reply %s, want placed", b)
			}
			placed++
			ids = append(ids, rep.JobID)
		}
		if cancel {
			if _, _, err := Pipelined(nc, subjects.JobCancel(), func(i int) []byte { return []byte(`{"job_id":"` + ids[i] + `"}`) }, len(ids), window); err != nil {
				return 0, err
			}
		}
	}
	return float64(placed) / busy.Seconds(), nil
}

// Observers subscribes k observers (each on its own TCP connection, as
// `observer` processes would) to every event of c and counts what they
// receive; stop closes them and returns the total.
func Observers(c *cluster.Cluster, k int) (stop func() int64, err error) {
	var total atomic.Int64
	var conns []*nats.Conn
	stop = func() int64 {
		for _, nc := range conns {
			nc.Close()
		}
		return total.Load()
	}
	for i := 0; i < k; i++ {
		nc, err := nats.Connect(c.URL(), nats.Name("gpusched-bench-observer"))
		if err != nil {
			stop()
			return nil, err
		}
		conns = append(conns, nc)
		sub, err := nc.Subscribe(events.NewSubjects("").AllEvents(), func(*nats.Msg) { total.Add(1) })
		if err != nil {
			stop()
			return nil, err
		}
		sub.SetPendingLimits(-1, -1)
		if err := nc.Flush(); err != nil {
			stop()
			return nil, err
		}
	}
	return stop, nil
}
