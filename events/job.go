package events

import (
	"math"
	"time"

	json "github.com/goccy/go-json"

	"github.com/gpusched/gpusched/model"
)

// Job is a validated job specification, normalised to domain units.
type Job struct {
	Name     string         `json:"name"`
	Tenant   string         `json:"tenant,omitempty"`
	Priority model.Priority `json:"priority"`
	// GPUs is the number of GPUs: 0 is CPU-only, 1 a single GPU, more a gang on one node.
	GPUs int `json:"gpus"`
	// VRAM is needed on each GPU.
	VRAM model.Bytes `json:"vram,omitempty"`
	// Util is the compute the job uses on each GPU in percent (its
	// gpu_milli / 10 unless given); co-located jobs above 100 in sum slow down.
	Util float64 `json:"util"`
	// Milli is the share of each GPU the job reserves, in thousandths
	// (gpu_milli, as the Alibaba trace has it); 0 means the share its VRAM
	// takes. Shares on one GPU never sum above 1000.
	Milli int `json:"gpu_milli,omitempty"`
	// Duration is the run time at reference speed (an A100) without slowdown.
	Duration time.Duration `json:"duration"`
	// Models restricts the GPU models the job may use; empty means any.
	Models      []string `json:"models,omitempty"`
	Preemptible bool     `json:"preemptible"`
	// Checkpoint is the interval of work between checkpoints; 0 means the
	// job never checkpoints and loses all progress when preempted.
	Checkpoint time.Duration `json:"checkpoint,omitempty"`
	CPU        float64       `json:"cpu"`
	Memory     model.Bytes   `json:"memory"`
	// GPU pins the job to one GPU id; Node pins it to one node.
	GPU  string `json:"gpu,omitempty"`
	Node string `json:"node,omitempty"`
	// Training makes it a distributed training job (GPUs is then its
	// replica count, whole GPUs over any nodes; Duration is 0: its
	// application's model says when it completes).
	Training *model.Training `json:"training,omitempty"`
	// JobType makes it a typed job: its speed on a GPU is the cluster's
	// throughput table's rate for that GPU model, job type and scale
	// factor (GPUs), or the packed pair's when it shares the GPU with
	// another typed job; its work is Steps steps, not a Duration.
	JobType string `json:"job_type,omitempty"`
	// Steps is a typed job's work: the steps it runs to complete.
	Steps float64 `json:"steps,omitempty"`
	// PerfClass is the job's application class for GPU variability: on
	// GPUs that carry a multiplier for it (model.GPUSpec.Variability), the job
	// runs at its speed ÷ the slowest of its GPUs' multipliers, and ÷ the
	// cluster's locality penalty when its GPUs span nodes (GangSlowdown).
	// Empty: every GPU runs it at its model's pace.
	PerfClass string `json:"perf_class,omitempty"`
	// PinOnce makes GPU and Node pins hold for the first placement only
	// (the demo's starting picture): after it the job goes where the
	// policy puts it, as any other.
	PinOnce bool `json:"pin_once,omitempty"`
}

// Typed reports whether the job is a typed job (JobType).
func (j *Job) Typed() bool { return j.JobType != "" }

// Work is the job's work in its own unit: steps for a typed job, seconds
// at reference speed for any other (a training job's model counts its own).
func (j *Job) Work() float64 {
	if j.Typed() {
		return j.Steps
	}
	return j.Duration.Seconds()
}

// Kept is the work the job keeps when stopped after done of it: a typed
// job every whole step it has run (a step is its checkpoint: Gavel's jobs
// save their state at the end of every lease), any other job up to its
// last checkpoint (model.KeptProgress).
func (j *Job) Kept(done float64) float64 {
	if j.Typed() {
		return math.Floor(max(0, done))
	}
	return model.KeptProgress(done, j.Checkpoint)
}

// Job defaults for fields a submission leaves out.
const (
	DefaultUtil   = 100.0
	DefaultCPU    = 4.0
	DefaultMemory = 16 * model.GiB
	DefaultTenant = "default"
)

// MarshalJSON writes the job in the form job.submit takes (durations as
// Go durations, "30m0s"), so a stored or forwarded spec reads back as the
// same job (DecodeSubmit and UnmarshalJSON).
func (j Job) MarshalJSON() ([]byte, error) {
	type plain Job
	w := struct {
		*plain
		Duration   string `json:"duration"`
		Checkpoint string `json:"checkpoint,omitempty"`
	}{plain: (*plain)(&j), Duration: j.Duration.String()}
	if j.Checkpoint > 0 {
		w.Checkpoint = j.Checkpoint.String()
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes, and durations as numbers of
// nanoseconds too: the form job journals written before had.
func (j *Job) UnmarshalJSON(data []byte) error {
	type plain Job
	var w struct {
		*plain
		Duration   wireDuration `json:"duration"`
		Checkpoint wireDuration `json:"checkpoint,omitempty"`
	}
	w.plain = (*plain)(j)
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	j.Duration, j.Checkpoint = time.Duration(w.Duration), time.Duration(w.Checkpoint)
	return nil
}

// wireDuration is a duration as a Go duration string or a number of
// nanoseconds.
type wireDuration time.Duration

func (d *wireDuration) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = wireDuration(v)
		return nil
	}
	var ns int64
	if err := json.Unmarshal(data, &ns); err != nil {
		return err
	}
	*d = wireDuration(ns)
	return nil
}

// CPUMilli is the job's CPU in thousandths of a core.
func (j *Job) CPUMilli() int64 { return model.CoresToMilli(j.CPU) }
