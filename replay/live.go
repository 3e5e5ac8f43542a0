package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/openb"
)

// LiveOptions tune a live replay.
type LiveOptions struct {
	// Window is how many submissions may be in flight (the scheduler takes
	// them one at a time, in order, so the result does not depend on it).
	Window int
	Logger *zap.Logger
	// Progress, when set, is called after each pod's answer.
	Progress func(done int)
	// TCP submits over loopback TCP rather than in-process (the bench
	// measures both).
	TCP bool
	// Store and DataDir are the cluster's job journal (none by default: a
	// replay is a computation; the bench measures what a journal costs).
	Store   durable.Storage
	DataDir string
}

// replayDuration is a replayed pod's run time: nothing departs during a
// replay (the paper's protocol), so pods run for a simulated year.
const replayDuration = "8760h"

// LiveResult is what a live replay returns besides the placements.
type LiveResult struct {
	// Summary is the cluster's own metrics after the last pod.
	Summary events.Metrics
	// StartUp is how long the cluster took to start (not counted in Run).
	StartUp, Run time.Duration
	// Latencies are each pod's submit→answer time, in pod order (with
	// Window > 1 they include the wait behind the pods ahead of it).
	Latencies []time.Duration
}

// Spec is the job a pod becomes on job.submit: its CPU, memory, GPU count
// and share, allowed models, not preemptible, running "forever".
func Spec(p *openb.Pod) events.SubmitRequest {
	spec := events.SubmitRequest{Name: p.Name, GPUs: new(p.GPUs), CPU: new(float64(p.CPUMilli) / 1000),
		Memory: events.SizeOf(model.Bytes(p.MemoryMiB) * model.MiB), Duration: replayDuration, Preemptible: new(false), Models: p.Models}
	if p.Milli > 0 {
		spec.GPUMilli = new(float64(p.Milli))
	}
	return spec
}

// Live runs a plan through the live actors and the bus: it starts a
// cluster of the plan's nodes (embedded NATS server, a node actor per node,
// a GPU actor per GPU, the scheduler with pol, the plan's node ranks,
// workload and seed, dropping pods that fit nowhere) and submits every pod
// over NATS in arrival order, as a client would. The curves are measured
// on a mirror of the placements the scheduler reports, then checked
// against the cluster's own metrics.
func Live(ctx context.Context, plan *Plan, pol string, opts LiveOptions) ([]Placement, *Mirror, LiveResult, error) {
	var res LiveResult
	if opts.Window <= 0 {
		opts.Window = 64
	}
	shape, err := openb.Shape(plan.Nodes)
	if err != nil {
		return nil, nil, res, err
	}
	start := time.Now()
	c, err := cluster.Start(ctx, cluster.Config{
		Seed:     uint64(plan.PolicySeed),
		Logger:   opts.Logger,
		Access:   cluster.Access{Listen: "127.0.0.1:0"},
		Hardware: cluster.Hardware{Shape: shape},
		Scheduling: cluster.Scheduling{
			Policy:            pol,
			NodeRank:          plan.Rank,
			Workload:          plan.Workload,
			DropUnschedulable: true,
		},
		Timing: cluster.Timing{MetricsPeriod: time.Hour},
		Durability: cluster.Durability{
			Store:   opts.Store,
			DataDir: opts.DataDir,
			Fresh:   true,
		},
	})
	if err != nil {
		return nil, nil, res, err
	}
	defer c.Stop()
	res.StartUp = time.Since(start)
	var nc *nats.Conn
	if opts.TCP {
		nc, err = nats.Connect(c.URL(), nats.Name("gpusched-replay"))
	} else {
		nc, err = c.Client("replay")
	}
	if err != nil {
		return nil, nil, res, err
	}
	defer nc.Close()
	subjects := events.NewSubjects(events.DefaultPrefix)

	start = time.Now()
	replies := make(chan *nats.Msg, opts.Window)
	inbox := nats.NewInbox()
	sub, err := nc.ChanSubscribe(inbox+".*", replies)
	if err != nil {
		return nil, nil, res, err
	}
	defer sub.Unsubscribe()
	sub.SetPendingLimits(-1, -1)

	m := NewMirror(plan)
	out := make([]Placement, len(plan.Pods))
	answers := make([]*events.SubmitReply, len(plan.Pods))
	next, sent := 0, 0
	sentAt := make([]time.Time, len(plan.Pods))
	res.Latencies = make([]time.Duration, len(plan.Pods))
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for next < len(plan.Pods) {
		for sent < len(plan.Pods) && sent-next < opts.Window {
			body, _ := json.Marshal(Spec(&plan.Pods[sent]))
			sentAt[sent] = time.Now()
			if err := nc.PublishRequest(subjects.JobSubmit(), inbox+"."+strconv.Itoa(sent), body); err != nil {
				return nil, nil, res, err
			}
			sent++
		}
		select {
		case <-ctx.Done():
			return nil, nil, res, ctx.Err()
		case <-timeout.C:
			return nil, nil, res, fmt.Errorf("no answer to pod %d (%s) within a minute", next, plan.Pods[next].Name)
		case msg := <-replies:
			i, err := strconv.Atoi(msg.Subject[len(inbox)+1:])
			if err != nil || i < 0 || i >= len(answers) {
				continue
			}
			var rep struct {
				events.SubmitReply
				Error *struct{ Field, Message string } `json:"error"`
			}
			if err := json.Unmarshal(msg.Data, &rep); err != nil {
				return nil, nil, res, fmt.Errorf("pod %s: bad answer %q", plan.Pods[i].Name, msg.Data)
			}
			if rep.Error != nil && rep.State != events.JobRejected {
				return nil, nil, res, fmt.Errorf("pod %s refused: %s: %s", plan.Pods[i].Name, rep.Error.Field, rep.Error.Message)
			}
			answers[i] = &rep.SubmitReply
			res.Latencies[i] = time.Since(sentAt[i])
		}
		// Apply answers in arrival order (replies may overtake each other).
		for next < len(plan.Pods) && answers[next] != nil {
			a := answers[next]
			if a.State == events.JobPlaced {
				out[next] = Placement{Node: a.Node, GPUs: a.GPUs}
			}
			if err := m.Apply(&plan.Pods[next], out[next].Node, out[next].GPUs); err != nil {
				return nil, nil, res, err
			}
			answers[next] = nil
			next++
			if opts.Progress != nil {
				opts.Progress(next)
			}
			timeout.Reset(time.Minute)
		}
	}
	res.Run = time.Since(start)
	msg, err := nc.Request(subjects.ClusterSnapshot(), []byte(`{"page":0}`), 30*time.Second)
	if err != nil {
		return nil, nil, res, fmt.Errorf("final snapshot: %w", err)
	}
	var snap events.Snapshot
	if err := json.Unmarshal(msg.Data, &snap); err != nil {
		return nil, nil, res, err
	}
	res.Summary = snap.Summary
	if used := m.used; snap.Summary.MilliUsed != used {
		return out, m, res, fmt.Errorf("the cluster holds %d thousandths of GPUs, the placements it reported add up to %d", snap.Summary.MilliUsed, used)
	}
	return out, m, res, nil
}
