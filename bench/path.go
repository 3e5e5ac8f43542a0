package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/scheduler"
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
	// Trace is the scheduler's (scheduler.Config.Trace): Stages.Trace.
	Trace func(scheduler.Stage)
}

// StartCluster starts an idle cluster (no job generator) on a random
// loopback port.
func StartCluster(ctx context.Context, o ClusterOptions) (*cluster.Cluster, error) {
	shape, err := model.ParseGPUs(o.GPUs)
	if err != nil {
		return nil, err
	}
	return cluster.Start(ctx, cluster.Config{
		Logger:         zap.NewNop(),
		SchedulerTrace: o.Trace,
		Access:         cluster.Access{Listen: "127.0.0.1:-1"},
		Hardware:       cluster.Hardware{Shape: shape},
		Scheduling:     cluster.Scheduling{Policy: o.Policy},
		Timing:         cluster.Timing{Speed: 1},
		Durability: cluster.Durability{
			Store:   o.Store,
			DataDir: o.DataDir,
			Fresh:   true,
		},
	})
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
	rate, _, err := ThroughputCPU(nc, rounds, perRound, window, cancel)
	return rate, err
}

// ThroughputCPU is Throughput that also says the process's CPU time
// (user and system, every goroutine: client, server, scheduler, actors)
// per placement while the placements were timed; 0 where the platform
// does not say.
func ThroughputCPU(nc *nats.Conn, rounds, perRound, window int, cancel bool) (float64, time.Duration, error) {
	subjects := events.NewSubjects("")
	var busy, cpu time.Duration
	placed := 0
	for round := 0; round < rounds; round++ {
		cpu0 := processCPU()
		replies, took, err := Pipelined(nc, subjects.JobSubmit(), func(int) []byte { return []byte(submitBody) }, perRound, window)
		if err != nil {
			return 0, 0, err
		}
		cpu += processCPU() - cpu0
		busy += took
		ids := make([]string, 0, len(replies))
		for _, b := range replies {
			var rep submitReply
			if err := json.Unmarshal(b, &rep); err != nil || rep.State != events.JobPlaced {
				return 0, 0, fmt.Errorf("submit reply %s, want placed", b)
			}
			placed++
			ids = append(ids, rep.JobID)
		}
		if cancel {
			if _, _, err := Pipelined(nc, subjects.JobCancel(), func(i int) []byte { return []byte(`{"job_id":"` + ids[i] + `"}`) }, len(ids), window); err != nil {
				return 0, 0, err
			}
		}
	}
	return float64(placed) / busy.Seconds(), cpu / time.Duration(max(1, placed)), nil
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

// Stages follows the scheduler through submissions made one at a time
// (SubmitLatency): for each, how long after the scheduler took it it sent
// the reservations, heard the first and the last answer, heard the store
// confirm the job's record, and replied. Its Trace is the scheduler's
// (ClusterOptions.Trace).
type Stages struct {
	mu sync.Mutex
	// on: a submission is being followed, taken at start.
	on    bool
	start time.Time
	cur   stageTimes
	// each is every followed submission's, where it happened.
	sent, firstAnswer, lastAnswer, stored, replied Latencies
}

// stageTimes is one submission's stages so far (zero: not yet).
type stageTimes struct{ sent, firstAnswer, lastAnswer, stored time.Duration }

// Trace records stage (called on the scheduler's goroutine).
func (s *Stages) Trace(stage scheduler.Stage) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if stage == scheduler.StageSubmit {
		s.on, s.start, s.cur = true, now, stageTimes{}
		return
	}
	if !s.on {
		return // a cancel's, between two submissions
	}
	at := now.Sub(s.start)
	switch stage {
	case scheduler.StageSent:
		if s.cur.sent == 0 {
			s.cur.sent = at
		}
	case scheduler.StageAnswer:
		if s.cur.sent == 0 {
			return // a late answer to the last cancel
		}
		if s.cur.firstAnswer == 0 {
			s.cur.firstAnswer = at
		}
		s.cur.lastAnswer = at
	case scheduler.StageStored:
		s.cur.stored = at
	case scheduler.StageReplied:
		s.on = false
		for _, r := range []struct {
			d  time.Duration
			to *Latencies
		}{{s.cur.sent, &s.sent}, {s.cur.firstAnswer, &s.firstAnswer}, {s.cur.lastAnswer, &s.lastAnswer}, {s.cur.stored, &s.stored}, {at, &s.replied}} {
			if r.d > 0 {
				*r.to = append(*r.to, r.d)
			}
		}
	}
}

// String is the medians, in the order they come: "reservations out
// 35 µs, answers 83 µs and 99 µs, stored 129 µs, reply 121 µs after the
// scheduler took the submission (p50s)".
func (s *Stages) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.replied) == 0 {
		return "no submission followed"
	}
	p50 := func(l Latencies) string { return us(slices.Clone(l).sorted().P(0.5)) } // a copy: check pairs them by index
	var parts []string
	if len(s.sent) > 0 {
		parts = append(parts, "reservations out "+p50(s.sent))
	}
	if len(s.firstAnswer) > 0 {
		parts = append(parts, "answers "+p50(s.firstAnswer)+" and "+p50(s.lastAnswer))
	}
	if len(s.stored) > 0 {
		parts = append(parts, "stored "+p50(s.stored))
	}
	parts = append(parts, "reply "+p50(s.replied))
	return strings.Join(parts, ", ") + " after the scheduler took the submission (p50s)"
}
