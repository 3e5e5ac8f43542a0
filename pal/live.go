package pal

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
)

// GPUModel is the catalog model of the artifact's GPUs: its measurements
// are of TACC Longhorn's V100s, and all its GPUs are of one type.
const GPUModel = "V100-16GB"

// Throughputs is the throughput table the live GPU actors run PAL's jobs
// at: each model of data (a job type) runs 1/iter_time iterations per
// second alone on a GPUModel at every scale factor up to gpus — the
// nominal pace, which the GPU divides by its gang's pace (the slowest
// GPU's multiplier × the locality penalty: events.Assignment.Pace). No
// pair shares a GPU.
func Throughputs(data *Data, gpus int) (*model.ThroughputTable, error) {
	jobs := map[string]map[string]float64{}
	for name, m := range data.Models {
		for scale := 1; scale <= gpus; scale++ {
			jobs[model.JobKey(name, scale)] = map[string]float64{"null": 1 / m.IterTime}
		}
	}
	raw, err := json.Marshal(map[string]any{GPUModel: jobs})
	if err != nil {
		return nil, err
	}
	return model.ParseThroughputs(raw)
}

// Live is a Driver as the live scheduler steps it (policy.ReplayedRounds;
// `cluster replay --pal` without --offline): each typed job submitted (a
// model as its job_type, its iterations as steps, its perf_class) is an
// arrival, and a round is decided every 360 seconds of the run from
// second 0 until every tracked job has completed.
type Live struct {
	d    *Driver
	data *Data
}

// NewLive is d, stepped live, with its data (the models it knows).
func NewLive(d *Driver, data *Data) *Live { return &Live{d: d, data: data} }

var _ policy.ReplayedRounds = (*Live)(nil)

// Accept takes typed jobs of the data's models, with the model's class
// as their perf_class, on no more GPUs than the cluster has.
func (l *Live) Accept(spec *events.Job) *model.FieldError {
	m, ok := l.data.Models[spec.JobType]
	switch {
	case !ok:
		return model.Errorf("job_type", "%q is not one of the PAL data's models (models.csv)", spec.JobType)
	case spec.PerfClass != Classes[m.Class]:
		return model.Errorf("perf_class", "%q: a %s job is of %s (models.csv)", spec.PerfClass, spec.JobType, Classes[m.Class])
	case spec.GPUs > len(l.d.owner):
		return model.Errorf("gpus", "%d: the cluster has %d GPUs", spec.GPUs, len(l.d.owner))
	}
	return nil
}

// Arrive gives the driver the job: its model, GPUs and iterations.
func (l *Live) Arrive(id int, arrivalS float64, spec *events.Job) error {
	return l.d.Arrive(TraceJob{ID: id, GPUs: spec.GPUs, Submit: arrivalS, Duration: spec.Steps, Model: spec.JobType})
}

// RoundEnded is Driver.RoundEnded (a round's end is its 360 s, whatever
// arrives).
func (l *Live) RoundEnded(float64) float64 { return l.d.RoundEnded() }

// Completed is Driver.Completed.
func (l *Live) Completed() []int { return l.d.Completed() }

// Done is Driver.Done.
func (l *Live) Done() bool { return l.d.Done() }

// Schedule is Driver.Schedule.
func (l *Live) Schedule() error {
	l.d.Schedule()
	return nil
}

// Progress is Driver.Progress (iterations).
func (l *Live) Progress(id int) float64 { return l.d.Progress(id) }

// End is Driver.End.
func (l *Live) End(id int) float64 { return l.d.End(id) }

// Tasks are the round's running jobs, in id order, each on its GPUs until
// the round's end.
func (l *Live) Tasks() []policy.ReplayedTask {
	var out []policy.ReplayedTask
	for _, j := range l.d.jobs {
		if j.running() {
			out = append(out, policy.ReplayedTask{Jobs: []int{j.id}, GPUs: j.gpus, FinishS: l.d.now})
		}
	}
	return out
}

// NextRoundS is the next round's second: every 360 s from 0, until the
// run is over.
func (l *Live) NextRoundS(float64) float64 {
	if l.d.Done() {
		return math.Inf(1)
	}
	return l.d.now
}

// GPUIDs are the live cluster's GPU ids in the driver's order (gpu-0 …),
// and NodeIDs its nodes' (node-0 …): GPU g is on node g / per node.
func GPUIDs(c Config) (gpus, nodes []string) {
	for n := range c.Machines {
		nodes = append(nodes, "node-"+strconv.Itoa(n))
		for i := range c.PerMachine {
			gpus = append(gpus, "gpu-"+strconv.Itoa(n*c.PerMachine+i))
		}
	}
	return gpus, nodes
}
