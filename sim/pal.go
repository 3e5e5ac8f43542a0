package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/jobgen"
	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/pal"
)

// palHours bounds a live PAL run's simulated time (its end is the
// driver's: every tracked job completed): eleven years, far beyond any
// of the artifact's runs.
const palHours = 100000

// PALShape is the cluster a PAL run under c runs on live: c.Machines
// nodes (node-0 …) of c.PerMachine V100s (gpu-0 … in the driver's order),
// each GPU carrying its multipliers of profile as its variability, so
// that a gang's pace (events.Assignment.Pace) is the artifact's slowest
// multiplier × locality penalty. The nodes' CPU and memory bound nothing.
func PALShape(c pal.Config, profile pal.Profile) (model.Shape, []string, error) {
	gm, err := model.LookupModel(pal.GPUModel)
	if err != nil {
		return model.Shape{}, nil, err
	}
	ids, nodes := pal.GPUIDs(c)
	var shape model.Shape
	for n, id := range nodes {
		// Room for a job per GPU at a typed job's default CPU and memory,
		// twice over.
		node := model.NodeSpec{ID: id, CPU: float64(2*c.PerMachine) * events.DefaultCPU, Memory: model.Bytes(2*c.PerMachine) * events.DefaultMemory}
		for i := range c.PerMachine {
			g := n*c.PerMachine + i
			v := map[string]float64{}
			for cl, name := range pal.Classes {
				v[name] = profile[g][cl]
			}
			node.GPUs = append(node.GPUs, model.GPUSpec{ID: ids[g], Model: gm, Variability: v})
		}
		shape.Nodes = append(shape.Nodes, node)
	}
	return shape, ids, nil
}

// palSource submits the workload's jobs as typed jobs at their submit
// times (their model as job_type, their iterations as steps, their
// class as perf_class), for as long as the run lasts.
type palSource struct {
	gen  *pal.Generator
	data *pal.Data
}

func (s *palSource) Next() (jobgen.Arrival, bool) {
	j := s.gen.Next()
	steps, gpus, arrival := j.Duration, j.GPUs, j.Submit
	name := "job-" + strconv.Itoa(j.ID)
	req := events.SubmitRequest{Name: name, JobType: j.Model, Steps: &steps, GPUs: &gpus, ArrivalS: &arrival,
		PerfClass: pal.Classes[s.data.Models[j.Model].Class]}
	body, err := json.Marshal(req)
	if err != nil {
		panic(err) // plain values: cannot fail
	}
	return jobgen.Arrival{At: time.Duration(j.Submit * float64(time.Second)), Name: name, Body: body}, true
}

// PALOptions are a live PAL run's optional hooks (as in Config).
type PALOptions struct {
	Logger *zap.Logger
	// Progress is told the simulated time reached now and then.
	Progress func(time.Duration)
	// Events hears every event of the run (Config.Events).
	Events func(subject string, data []byte)
}

// PALRun is a live PAL run: the driver's result, checked against the
// cluster's job events, and the cluster's run.
type PALRun struct {
	Result *pal.Result
	Run    *Result
}

// RunPAL runs trace under c on data live: a cluster of PALShape on the
// virtual clock, every job submitted over the bus at its submit time,
// the scheduler stepping PAL's rounds (core.ReplayConfig over pal.Live,
// the offline run's driver) and enacting them on the GPU actors, which
// run each job at its nominal pace ÷ its gang's pace. It ends when every
// tracked job has completed. Each tracked JCT is checked against the
// scheduler's job events (finish_s).
func RunPAL(ctx context.Context, data *pal.Data, trace []pal.TraceJob, c pal.Config, opts PALOptions) (*PALRun, error) {
	d, err := pal.NewDriver(data, trace, c)
	if err != nil {
		return nil, err
	}
	shape, ids, err := PALShape(c, d.Profile())
	if err != nil {
		return nil, err
	}
	table, err := pal.Throughputs(data, len(ids))
	if err != nil {
		return nil, err
	}
	var missed missedTasks
	src := &palSource{gen: pal.NewGenerator(trace, c), data: data}
	run, err := Run(ctx, Config{Shape: shape, Policy: "binpack", Source: src, Hours: palHours, Logger: opts.Logger, Progress: opts.Progress, Events: opts.Events,
		Throughputs: table, LocalityPenalty: c.Locality, StopWhen: d.Done,
		Replay: &core.ReplayConfig{Driver: pal.NewLive(d, data), Origin: Epoch, GPUs: ids, Missed: missed.add}})
	if err != nil {
		return nil, err
	}
	if err := missed.check(d.Done(), run.Length); err != nil {
		return nil, err
	}
	res := d.Result()
	byID := replayedJobs(run)
	for _, jr := range res.Jobs {
		ev, ok := byID[jr.ID]
		switch {
		case !ok:
			return nil, fmt.Errorf("job %d: no job events heard", jr.ID)
		case ev.FinishS == nil:
			return nil, fmt.Errorf("job %d: the rounds completed it and its job events do not say so (state %s)", jr.ID, ev.State)
		case math.Abs(*ev.FinishS-jr.Finish) > 0:
			return nil, fmt.Errorf("job %d: its job events say it completed at %v s, the rounds at %v s", jr.ID, *ev.FinishS, jr.Finish)
		}
	}
	return &PALRun{Result: res, Run: run}, nil
}
