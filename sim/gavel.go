package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/jobgen"
	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/gavel"
	"github.com/gpusched/gpusched/model"
)

// gavelMilli is each Gavel job's share of each of its GPUs: half, so that
// the two jobs of a packed pair fit one GPU (the scheduler's rounds, not
// the shares, decide who shares).
const gavelMilli = 500.0

// gavelHours bounds a live Gavel run's simulated time (its end is the
// driver's: every measured job completed): eleven years, far beyond any
// of the reference's runs.
const gavelHours = 100000

// GavelShape is the cluster a Gavel run of counts GPUs runs on live: one
// node per GPU type (K80s, P100s, V100s, in Gavel's worker order), so that
// every task's GPUs, all of one type, are one node's; the GPUs are
// numbered gpu-0, gpu-1, … in that order, Gavel's worker ids. The nodes'
// CPU and memory bound nothing.
func GavelShape(counts [3]int) (model.Shape, []string, error) {
	var shape model.Shape
	var ids []string
	for w, name := range gavel.TypeNames {
		if counts[w] == 0 {
			continue
		}
		gm, err := model.LookupModel(name)
		if err != nil {
			return model.Shape{}, nil, err
		}
		// Room for two jobs a GPU (a packed pair) at a typed job's
		// default CPU and memory, twice over.
		n := model.NodeSpec{ID: name, CPU: float64(4*counts[w]) * events.DefaultCPU, Memory: model.Bytes(4*counts[w]) * events.DefaultMemory}
		for range counts[w] {
			id := "gpu-" + strconv.Itoa(len(ids))
			n.GPUs = append(n.GPUs, model.GPUSpec{ID: id, Model: gm})
			ids = append(ids, id)
		}
		shape.Nodes = append(shape.Nodes, n)
	}
	return shape, ids, nil
}

// gavelSource submits the generator's jobs as typed jobs at their arrival
// times (their float arrival beside, for the rounds): a static trace's
// WindowEnd jobs, or a continuous trace's for as long as the run lasts.
type gavelSource struct {
	gen    *gavel.Generator
	static bool
	left   int
	// placed submits each job for the scheduler's own placement (whole
	// GPUs, no float arrival): RunGavelPlaced.
	placed bool
	// drawn are the jobs submitted, by id: what was drawn that a
	// submission does not carry (the duration on V100s).
	drawn []gavel.Job
}

func (s *gavelSource) Next() (jobgen.Arrival, bool) {
	if s.static {
		if s.left == 0 {
			return jobgen.Arrival{}, false
		}
		s.left--
	}
	j := s.gen.Next()
	s.drawn = append(s.drawn, j)
	steps, gpus, arrival := j.TotalSteps, j.Scale, j.Arrival
	name := "job-" + strconv.Itoa(j.ID)
	req := events.SubmitRequest{Name: name, JobType: j.Type, Steps: &steps, GPUs: &gpus}
	if !s.placed {
		milli := gavelMilli
		req.ArrivalS, req.GPUMilli = &arrival, &milli
	}
	body, err := json.Marshal(req)
	if err != nil {
		panic(err) // plain values: cannot fail
	}
	return jobgen.Arrival{At: time.Duration(j.Arrival * float64(time.Second)), Name: name, Body: body}, true
}

// GavelRun is a live Gavel run: the driver's result, with each job's JCT
// as the cluster's job events said it, and the cluster's run.
type GavelRun struct {
	Result *gavel.Result
	Run    *Result
}

// RunGavel runs c on data live: a cluster of GavelShape on the virtual
// clock, every generated job submitted over the bus at its arrival, the
// scheduler stepping Gavel's rounds (core.ReplayConfig over gavel.Live, the offline run's
// driver) and enacting them on the GPU actors, which run the jobs at the
// throughput table's rates. It ends when every measured job has
// completed. Each JCT the result gives is checked against the
// scheduler's job events (finish_s), which carry the rounds' floats.
func RunGavel(ctx context.Context, data *gavel.Data, c gavel.Config, log *zap.Logger, progress func(time.Duration)) (*GavelRun, error) {
	d, err := gavel.NewDriver(data, c)
	if err != nil {
		return nil, err
	}
	var missed missedTasks
	shape, ids, err := GavelShape(c.Counts)
	if err != nil {
		return nil, err
	}
	src := &gavelSource{gen: gavel.NewGenerator(data, c.Seed, c.Lam, c.MultiGPU), static: c.Static(), left: c.WindowEnd}
	run, err := Run(ctx, Config{Shape: shape, Policy: "binpack", Source: src, Hours: gavelHours, Logger: log, Progress: progress,
		Throughputs: data.Table, StopWhen: d.Done, Replay: &core.ReplayConfig{Driver: gavel.NewLive(d, data), Origin: Epoch, GPUs: ids, Missed: missed.add}})
	if err != nil {
		return nil, err
	}
	if err := missed.check(d.Done(), run.Length); err != nil {
		return nil, err
	}
	res := d.Result()
	byID := replayedJobs(run)
	for i := range res.Jobs {
		jr := &res.Jobs[i]
		if jr.ID >= len(src.drawn) || src.drawn[jr.ID].Type != jr.Type || src.drawn[jr.ID].TotalSteps != jr.TotalSteps {
			return nil, fmt.Errorf("job %d: the rounds' job is not the one drawn with that id (submissions out of order?)", jr.ID)
		}
		jr.Duration = src.drawn[jr.ID].Duration
		ev, ok := byID[jr.ID]
		switch {
		case !ok:
			return nil, fmt.Errorf("job %d: no job events heard", jr.ID)
		case ev.FinishS == nil:
			if !math.IsNaN(jr.JCT) {
				return nil, fmt.Errorf("job %d: the rounds completed it and its job events do not say so (state %s)", jr.ID, ev.State)
			}
		case *ev.FinishS-jr.Arrival != jr.JCT:
			return nil, fmt.Errorf("job %d: its job events say it completed at %v s, the rounds at %v s", jr.ID, *ev.FinishS, jr.Arrival+jr.JCT)
		}
	}
	return &GavelRun{Result: res, Run: run}, nil
}

// RunGavelPlaced runs c's trace live under one of the scheduler's own
// placement policies and queue orders instead of Gavel's rounds: every
// job, drawn as Gavel draws it, is a typed job asking for its scale
// factor's whole GPUs on one node (one node per GPU type: GavelShape),
// submitted at its arrival, placed as the policy places any job and run
// to its steps at the throughput table's rates alone on its GPUs (no
// time slicing: a job keeps its GPUs until it completes, unless
// preempted). It ends when every measured job has completed. The result
// reads as a Gavel run's: each job's JCT (completion less arrival), the
// window's mean, the makespan (the last measured job's completion) and
// the utilisation (GPU-seconds run over the GPUs × the makespan).
func RunGavelPlaced(ctx context.Context, data *gavel.Data, c gavel.Config, placement, queue string, log *zap.Logger) (*gavel.Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	shape, ids, err := GavelShape(c.Counts)
	if err != nil {
		return nil, err
	}
	src := &gavelSource{gen: gavel.NewGenerator(data, c.Seed, c.Lam, c.MultiGPU), static: c.Static(), left: c.WindowEnd, placed: true}
	measured := func(id int) bool { return id >= c.WindowStart && id < c.WindowEnd }
	want := c.WindowEnd - c.WindowStart
	var done atomic.Int64
	completed := events.NewSubjects("").JobEvent(events.JobCompleted)
	watch := func(subject string, body []byte) {
		if !strings.HasSuffix(subject, completed) {
			return
		}
		var ev struct {
			Data struct {
				Name string `json:"name"`
			} `json:"data"`
		}
		if json.Unmarshal(body, &ev) != nil {
			return
		}
		if id, err := strconv.Atoi(strings.TrimPrefix(ev.Data.Name, "job-")); err == nil && measured(id) {
			done.Add(1)
		}
	}
	run, err := Run(ctx, Config{Shape: shape, Policy: placement, Queue: queue, Source: src, Hours: gavelHours, Logger: log,
		Throughputs: data.Table, Events: watch, StopWhen: func() bool { return done.Load() >= int64(want) }, Seed: c.Seed})
	if err != nil {
		return nil, err
	}
	res := &gavel.Result{Config: c, PolicyName: placement}
	ended := map[int]JobResult{}
	busy := 0.0
	for _, j := range run.Jobs {
		busy += j.RunS * float64(j.GPUCount)
		if id, err := strconv.Atoi(strings.TrimPrefix(j.Name, "job-")); err == nil && j.Ended && j.State == events.JobCompleted {
			ended[id] = j
		}
	}
	var window []float64
	for _, drawn := range src.drawn {
		jr := gavel.JobResult{Job: drawn, JCT: math.NaN(), InWindow: measured(drawn.ID)}
		if j, ok := ended[drawn.ID]; ok {
			jr.JCT = j.End - drawn.Arrival
			res.Completed++
			if jr.InWindow {
				window = append(window, jr.JCT)
				res.Makespan = max(res.Makespan, j.End)
			}
		}
		res.Jobs = append(res.Jobs, jr)
	}
	if len(window) < want {
		return nil, fmt.Errorf("%s: %d of the %d measured jobs completed within %d simulated hours", placement, len(window), want, gavelHours)
	}
	for _, x := range window {
		res.AverageJCT += x / float64(len(window))
	}
	if res.Makespan > 0 {
		res.Utilization = busy / (float64(len(ids)) * res.Makespan)
	}
	return res, nil
}
