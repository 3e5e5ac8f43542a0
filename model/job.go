package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// FieldError is a rejected request: the JSON field at fault (empty for the
// body as a whole) and a message a person understands.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error implements error.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Errorf builds a FieldError for field.
func Errorf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Job is a validated job specification, normalised to domain units.
type Job struct {
	Name     string   `json:"name"`
	Tenant   string   `json:"tenant,omitempty"`
	Priority Priority `json:"priority"`
	// GPUs is the number of GPUs: 0 is CPU-only, 1 a single GPU, more a gang on one node.
	GPUs int `json:"gpus"`
	// VRAM is needed on each GPU.
	VRAM Bytes `json:"vram"`
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
	Memory     Bytes         `json:"memory"`
	// GPU pins the job to one GPU id; Node pins it to one node.
	GPU  string `json:"gpu,omitempty"`
	Node string `json:"node,omitempty"`
}

// Job defaults for fields a submission leaves out.
const (
	DefaultUtil   = 100.0
	DefaultCPU    = 4.0
	DefaultMemory = 16 * GiB
	DefaultTenant = "default"
)

// jobFields lists every field a job submission may carry.
var jobFields = map[string]bool{
	"name": true, "tenant": true, "priority": true, "gpus": true, "vram": true,
	"util": true, "gpu_milli": true, "duration": true, "models": true,
	"preemptible": true, "checkpoint": true, "cpu": true, "memory": true,
	"gpu": true, "node": true,
}

// ParseJob decodes and validates a job submission. Every problem is reported
// as a FieldError naming the field: malformed JSON, unknown fields, wrong
// types, negative or unparsable sizes, unknown priorities and models.
func ParseJob(body []byte) (Job, *FieldError) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		return Job{}, Errorf("body", "malformed JSON: %v", err)
	}
	if raw == nil {
		return Job{}, Errorf("body", "the body must be a JSON object")
	}
	if dec.More() {
		return Job{}, Errorf("body", "malformed JSON: trailing data after the object")
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "" {
			return Job{}, Errorf("body", "a field with an empty name")
		}
		if !jobFields[k] {
			return Job{}, Errorf(k, "unknown field %q", k)
		}
	}
	job := Job{Priority: PriorityMedium, GPUs: 1, Util: DefaultUtil, Preemptible: true,
		CPU: DefaultCPU, Memory: DefaultMemory, Tenant: DefaultTenant}
	field := func(name string, into any) *FieldError {
		v, ok := raw[name]
		if !ok {
			return nil
		}
		if err := json.Unmarshal(v, into); err != nil {
			msg := err.Error()
			if te, ok := err.(*json.UnmarshalTypeError); ok {
				msg = fmt.Sprintf("must be a %s, not a %s", te.Type, te.Value)
			}
			return Errorf(name, "%s", msg)
		}
		return nil
	}
	var (
		duration, checkpoint string
		gpuMilli             *float64
		util                 *float64
		vram                 *Bytes
	)
	for _, fe := range []*FieldError{
		field("name", &job.Name), field("tenant", &job.Tenant), field("priority", &job.Priority),
		field("gpus", &job.GPUs), field("vram", &vram), field("util", &util),
		field("gpu_milli", &gpuMilli), field("duration", &duration), field("models", &job.Models),
		field("preemptible", &job.Preemptible), field("checkpoint", &checkpoint),
		field("cpu", &job.CPU), field("memory", &job.Memory), field("gpu", &job.GPU), field("node", &job.Node),
	} {
		if fe != nil {
			return Job{}, fe
		}
	}
	if strings.TrimSpace(job.Name) == "" {
		return Job{}, Errorf("name", "required: give the job a name")
	}
	if job.GPUs < 0 {
		return Job{}, Errorf("gpus", "must be 0 (CPU-only) or more, not %d", job.GPUs)
	}
	if gpuMilli != nil {
		if *gpuMilli < 1 || *gpuMilli > 1000 || *gpuMilli != float64(int(*gpuMilli)) {
			return Job{}, Errorf("gpu_milli", "must be a whole number of thousandths of a GPU from 1 to 1000, not %v", *gpuMilli)
		}
		if job.GPUs > 1 && *gpuMilli != 1000 {
			return Job{}, Errorf("gpu_milli", "a job of %d GPUs takes whole GPUs: gpu_milli must be 1000 or left out", job.GPUs)
		}
		if job.GPUs == 0 {
			return Job{}, Errorf("gpu_milli", "a CPU-only job (gpus 0) takes no GPU share")
		}
		job.Milli = int(*gpuMilli)
		job.Util = *gpuMilli / 10
	}
	if util != nil {
		job.Util = *util
	}
	if job.Util < 0 || job.Util > 100 {
		return Job{}, Errorf("util", "must be a percentage between 0 and 100, not %v", job.Util)
	}
	if job.GPUs > 0 {
		if vram == nil && job.Milli == 0 {
			return Job{}, Errorf("vram", "required for a GPU job: the VRAM per GPU, e.g. \"12GiB\" (or give gpu_milli, the share of each GPU)")
		}
		if vram != nil && *vram <= 0 {
			return Job{}, Errorf("vram", "must be positive")
		}
		if vram != nil {
			job.VRAM = *vram
		}
	} else if vram != nil && *vram != 0 {
		return Job{}, Errorf("vram", "a CPU-only job (gpus 0) takes no VRAM")
	}
	if duration == "" {
		return Job{}, Errorf("duration", "required: the run time at reference speed, e.g. \"30m\"")
	}
	d, err := time.ParseDuration(duration)
	if err != nil {
		return Job{}, Errorf("duration", "%q is not a duration (use Go durations such as 4h or 30m)", duration)
	}
	if d <= 0 {
		return Job{}, Errorf("duration", "must be positive, not %s", duration)
	}
	job.Duration = d
	if checkpoint != "" {
		c, err := time.ParseDuration(checkpoint)
		if err != nil || c < 0 {
			return Job{}, Errorf("checkpoint", "%q is not a non-negative duration", checkpoint)
		}
		job.Checkpoint = c
	}
	if job.CPU < 0 {
		return Job{}, Errorf("cpu", "must not be negative")
	}
	if job.Memory < 0 {
		return Job{}, Errorf("memory", "must not be negative")
	}
	for i, name := range job.Models {
		m, err := LookupModel(name)
		if err != nil {
			return Job{}, Errorf("models", "%v", err)
		}
		job.Models[i] = m.Name
	}
	if job.GPU != "" && !ValidToken(job.GPU) {
		return Job{}, Errorf("gpu", "%q is not a GPU id", job.GPU)
	}
	if job.Node != "" && !ValidToken(job.Node) {
		return Job{}, Errorf("node", "%q is not a node id", job.Node)
	}
	if job.GPU != "" && job.GPUs != 1 {
		return Job{}, Errorf("gpu", "pinning to one GPU needs gpus 1")
	}
	return job, nil
}

// CPUMilli is the job's CPU in thousandths of a core.
func (j *Job) CPUMilli() int64 { return CoresToMilli(j.CPU) }

// CoresToMilli converts cores to thousandths of a core, rounded.
func CoresToMilli(cores float64) int64 { return int64(math.Round(cores * 1000)) }

// KeptProgress is the work a job keeps when stopped after done seconds of
// work with the given checkpoint interval: everything up to its last
// checkpoint, or nothing when it never checkpoints.
func KeptProgress(done float64, checkpoint time.Duration) float64 {
	c := checkpoint.Seconds()
	if c <= 0 || done <= 0 {
		return 0
	}
	return float64(int64(done/c)) * c
}
