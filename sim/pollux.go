package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/jobgen"
	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/pollux"
)

// PolluxShape is a cluster of c.Nodes nodes of c.GPUsPerNode GPUs
// (node-0 with gpu-0…, node-1 …): the Pollux paper's 16 × 4. The GPU
// model does not matter to the training jobs (their applications' step
// times are measured, MODEL.md §3.4).
func PolluxShape(c pollux.Cluster) model.Shape {
	a100, _ := model.LookupModel("A100-40GB")
	var shape model.Shape
	for n := range c.Nodes {
		node := model.NodeSpec{ID: "node-" + strconv.Itoa(n), Labels: map[string]string{}, CPU: 64, Memory: 512 * model.GiB}
		for g := range c.GPUsPerNode {
			node.GPUs = append(node.GPUs, model.GPUSpec{ID: "gpu-" + strconv.Itoa(n*c.GPUsPerNode+g), Model: a100})
		}
		shape.Nodes = append(shape.Nodes, node)
	}
	return shape
}

// PolluxRun is one live run of a Pollux workload: the jobs as the model
// left them (pollux.Result, as the offline run gives it) and the run's
// own figures.
type PolluxRun struct {
	Result *pollux.Result
	Run    *Result
}

// RunPollux runs a Pollux workload live on a virtual clock: the reference
// cluster's GPU actors and the scheduler on an embedded NATS server, each
// job submitted over the bus at its second as a training job, the
// scheduler's training rounds deciding under p (pollux.Rounds, as the
// offline run does) and the GPU actors stepping the jobs. The jobs'
// final states come from the scheduler's job events.
func RunPollux(ctx context.Context, m *pollux.Model, specs []pollux.Spec, c pollux.Cluster, p pollux.Policy, log *zap.Logger,
	progress func(time.Duration)) (*PolluxRun, error) {
	arrivals := make([]jobgen.Arrival, len(specs))
	for i, s := range specs {
		body, err := json.Marshal(events.SubmitRequest{Name: s.Name, Training: &model.Training{App: s.App, Batch: s.Batch, Replicas: s.Replicas}})
		if err != nil {
			return nil, err
		}
		arrivals[i] = jobgen.Arrival{At: time.Duration(s.Submit) * time.Second, Name: s.Name, Body: body}
	}
	res, err := Run(ctx, Config{Shape: PolluxShape(c), Policy: "binpack", Arrivals: arrivals, Logger: log, Progress: progress,
		Training: &core.TrainingConfig{Model: m, Policy: p, Interval: time.Duration(c.Interval) * time.Second, Origin: Epoch}})
	if err != nil {
		return nil, err
	}
	byName := map[string]*JobResult{}
	for i := range res.Jobs {
		byName[res.Jobs[i].Name] = &res.Jobs[i]
	}
	out := &pollux.Result{}
	for _, s := range specs {
		jr, ok := byName[s.Name]
		if !ok || jr.Training == nil || !jr.Training.Done {
			return nil, fmt.Errorf("job %s did not complete in the live run (state %v)", s.Name, jobState(jr))
		}
		j, err := m.Restore(s, *jr.Training)
		if err != nil {
			return nil, err
		}
		out.Jobs = append(out.Jobs, j)
		out.End = max(out.End, j.Clock)
	}
	return &PolluxRun{Result: out, Run: res}, nil
}

func jobState(j *JobResult) string {
	if j == nil {
		return "never seen"
	}
	return j.State
}
