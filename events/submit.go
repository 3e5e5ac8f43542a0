package events

import (
	"bytes"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gpusched/gpusched/model"
)

// SubmitRequest is the body of <p>.job.submit: a job as a client writes
// it. Every client of the project builds this type (the generator, the
// CLI, the dashboards, trace replays) and the scheduler decodes it with
// DecodeSubmit, so the wire form is written once. Optional fields with a
// default are pointers: absent means the default (docs/OBSERVER.md lists
// them), and a zero given (gpus 0: a CPU-only job) is kept.
type SubmitRequest struct {
	// JobID, when given, is the job's id, chosen by the client: an
	// idempotency key. A submission naming a job id that exists is not a
	// second job: it is answered as that job's submission was. A client
	// that retries after a timeout sends the same id (docs/internals/scheduler.md,
	// "Idempotent submission").
	JobID string `json:"job_id,omitempty"`
	Name  string `json:"name"`
	// Tenant defaults to DefaultTenant; on an authenticated bus it
	// must be the caller's own (or absent).
	Tenant string `json:"tenant,omitempty"`
	// Priority is high, medium (the default), low or an integer.
	Priority *model.Priority `json:"priority,omitempty"`
	// GPUs defaults to 1; 0 is CPU-only, more a gang on one node.
	GPUs *int `json:"gpus,omitempty"`
	// VRAM per GPU: a size with its unit ("20GB", "512MB"; a GB is 2^30
	// bytes, model.GB) or a number of bytes, at least 1MB.
	VRAM *Size `json:"vram,omitempty"`
	// Util is the compute per GPU in percent (default 100, or gpu_milli/10).
	Util *float64 `json:"util,omitempty"`
	// GPUMilli is the share of each GPU in thousandths (1–1000, whole).
	GPUMilli *float64 `json:"gpu_milli,omitempty"`
	// Duration is the run time at reference speed, a Go duration ("30m").
	Duration string `json:"duration"`
	// Models are the GPU models the job may use; empty means any.
	Models []string `json:"models,omitempty"`
	// Preemptible defaults to true.
	Preemptible *bool `json:"preemptible,omitempty"`
	// Checkpoint is the interval of work between checkpoints ("10m").
	Checkpoint string `json:"checkpoint,omitempty"`
	// CPU in cores (default DefaultCPU) and Memory (default
	// DefaultMemory) are what the job holds on its node.
	CPU    *float64 `json:"cpu,omitempty"`
	Memory *Size    `json:"memory,omitempty"`
	// GPU pins the job to one GPU id; Node to one node.
	GPU  string `json:"gpu,omitempty"`
	Node string `json:"node,omitempty"`
	// Training makes the job a distributed training job (the Pollux
	// paper's kind): its application, batch size and replica count (one
	// whole GPU each, over as many nodes as its placement takes). Its run
	// time comes from its application's model, so duration, vram, gpus,
	// gpu_milli, util, checkpoint, gpu and node are not given with it.
	Training *model.Training `json:"training,omitempty"`
	// JobType makes the job a typed job, run at the rate the cluster's
	// throughput table gives that type on each GPU model (and its packed
	// pair's when it shares a GPU); gpus is its scale factor. Its work is
	// Steps steps, so duration and checkpoint are not given with it (a
	// typed job keeps every step it has run). Without vram or gpu_milli it
	// takes whole GPUs; gpu_milli 500 lets two typed jobs of a pair the
	// table measured share one (two typed gangs of one scale factor, their
	// GPUs). Steps need not be whole (Gavel's jobs run duration × rate).
	JobType string   `json:"job_type,omitempty"`
	Steps   *float64 `json:"steps,omitempty"`
	// ArrivalS is, on a cluster running Gavel's rounds, the job's arrival
	// in seconds since the run's start to more precision than the clock's
	// nanoseconds (it must be the clock's now to the nanosecond): Gavel's
	// arrivals are floats, and its decisions read them.
	ArrivalS *float64 `json:"arrival_s,omitempty"`
	// PerfClass is the job's application class for GPU variability
	// (Job.PerfClass): on GPUs carrying a multiplier for it the job
	// runs at the pace of the slowest of them.
	PerfClass string `json:"perf_class,omitempty"`
	// PinOnce makes gpu and node hold for the job's first placement only
	// (Job.PinOnce): a pin that draws a starting picture.
	PinOnce *bool `json:"pin_once,omitempty"`
}

// Bounds of a submission's fields: what no real job needs, so that no
// field can overflow what is computed from it (cores become thousandths
// in an int64; a control message carrying the name must stay well under
// a GPU actor's 64 KiB limit) or make a job that can never run.
const (
	// MaxNameBytes bounds a job's name.
	MaxNameBytes = 256
	// MaxTenantBytes bounds a tenant's name (also a NATS account name).
	MaxTenantBytes = 64
	// MaxJobIDBytes bounds a job id a client chooses.
	MaxJobIDBytes = 64
	// MaxPriority bounds an integer priority either way (the named levels
	// are 1 to 3).
	MaxPriority = 1000
	// MaxGPUs bounds a gang (it runs on one node).
	MaxGPUs = 1024
	// MaxModels bounds the list of GPU models a job may use.
	MaxModels = 64
	// MaxCPU bounds the cores a job holds on its node.
	MaxCPU = 65536
	// MaxMemory bounds the memory a job holds on its node (1 PiB).
	MaxMemory = model.Bytes(1 << 50)
	// MaxVRAM bounds the VRAM per GPU (16 TiB).
	MaxVRAM = model.Bytes(1 << 44)
	// MaxDuration bounds a job's run time and checkpoint interval.
	MaxDuration = 10 * 8766 * time.Hour
)

// boundedText refuses text longer than max bytes or holding control
// characters, naming field.
func boundedText(field, s string, max int) *model.FieldError {
	if len(s) > max {
		return model.Errorf(field, "at most %d bytes, not %d", max, len(s))
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return model.Errorf(field, "%q holds a control character or invalid UTF-8", clip(s))
		}
	}
	return nil
}

// clip shortens text for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Size is a size in a submission: read as model.Bytes reads it (a size
// with its unit, or a number of bytes), written with its unit in the
// largest unit that divides it (model.Bytes.Exact), as a person writes it.
type Size model.Bytes

// SizeOf is b as a submission's size.
func SizeOf(b model.Bytes) *Size { s := Size(b); return &s }

// MarshalJSON writes the size with its unit ("38GB").
func (s Size) MarshalJSON() ([]byte, error) { return []byte(`"` + model.Bytes(s).Exact() + `"`), nil }

// UnmarshalJSON reads a size as model.Bytes does.
func (s *Size) UnmarshalJSON(data []byte) error { return (*model.Bytes)(s).UnmarshalJSON(data) }

// DecodeSubmitRequest decodes a job.submit body strictly (DecodeStrict),
// without validating it (Job does): the scheduler looks at what was given
// (the tenant) before it makes the job.
func DecodeSubmitRequest(body []byte) (SubmitRequest, *model.FieldError) {
	var r SubmitRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return r, model.Errorf("body", "empty: a job submission is a JSON object with at least name, vram and duration")
	}
	fe := DecodeStrict(body, &r)
	return r, fe
}

// DecodeSubmit decodes and validates a job.submit body: every problem is
// a FieldError naming the field.
func DecodeSubmit(body []byte) (Job, *model.FieldError) {
	r, fe := DecodeSubmitRequest(body)
	if fe != nil {
		return Job{}, fe
	}
	return r.Job()
}

// Job validates the submission and gives the job it asks for, with the
// defaults filled in and sizes, durations and model names normalised.
func (r *SubmitRequest) Job() (Job, *model.FieldError) {
	if r.Training != nil {
		return r.trainingJob()
	}
	job := Job{Name: r.Name, Tenant: r.Tenant, Priority: model.PriorityMedium, GPUs: 1, Util: DefaultUtil,
		Preemptible: true, CPU: DefaultCPU, Memory: DefaultMemory, GPU: r.GPU, Node: r.Node}
	if job.Tenant == "" {
		job.Tenant = DefaultTenant
	}
	if r.Priority != nil {
		job.Priority = *r.Priority
	}
	if r.GPUs != nil {
		job.GPUs = *r.GPUs
	}
	if r.Preemptible != nil {
		job.Preemptible = *r.Preemptible
	}
	if r.CPU != nil {
		job.CPU = *r.CPU
	}
	if r.Memory != nil {
		job.Memory = model.Bytes(*r.Memory)
	}
	if len(r.Models) > 0 {
		job.Models = append([]string(nil), r.Models...)
	}
	if r.PinOnce != nil && *r.PinOnce {
		if r.GPU == "" && r.Node == "" {
			return Job{}, model.Errorf("pin_once", "needs gpu or node: it says the pin holds for the first placement only")
		}
		job.PinOnce = true
	}
	if r.PerfClass != "" {
		if len(r.PerfClass) > MaxNameBytes || !model.ValidToken(r.PerfClass) {
			return Job{}, model.Errorf("perf_class", "%q is not an application class: letters, digits, - and _ only (PAL's are classA to classD)", clip(r.PerfClass))
		}
		job.PerfClass = r.PerfClass
	}
	if r.JobID != "" && (len(r.JobID) > MaxJobIDBytes || !model.ValidToken(r.JobID)) {
		return Job{}, model.Errorf("job_id", "%q is not a job id: letters, digits, - and _ only, at most %d of them (a UUID will do)", clip(r.JobID), MaxJobIDBytes)
	}
	if strings.TrimSpace(job.Name) == "" {
		return Job{}, model.Errorf("name", "required: give the job a name")
	}
	if fe := boundedText("name", job.Name, MaxNameBytes); fe != nil {
		return Job{}, fe
	}
	if len(job.Tenant) > MaxTenantBytes || !model.ValidToken(job.Tenant) {
		return Job{}, model.Errorf("tenant", "%q is not a tenant: letters, digits, - and _ only, at most %d of them", clip(job.Tenant), MaxTenantBytes)
	}
	if job.Priority < -MaxPriority || job.Priority > MaxPriority {
		return Job{}, model.Errorf("priority", "must be high, medium, low or an integer from %d to %d, not %d", -MaxPriority, MaxPriority, job.Priority)
	}
	if job.GPUs > MaxGPUs {
		return Job{}, model.Errorf("gpus", "at most %d (a gang runs on one node), not %d", MaxGPUs, job.GPUs)
	}
	if len(job.Models) > MaxModels {
		return Job{}, model.Errorf("models", "at most %d models, not %d", MaxModels, len(job.Models))
	}
	if job.GPUs < 0 {
		return Job{}, model.Errorf("gpus", "must be 0 (CPU-only) or more, not %d", job.GPUs)
	}
	if m := r.GPUMilli; m != nil {
		if *m < 1 || *m > 1000 || *m != float64(int(*m)) {
			return Job{}, model.Errorf("gpu_milli", "must be a whole number of thousandths of a GPU from 1 to 1000, not %v", *m)
		}
		// A typed gang may take half of each GPU: the two gangs of a
		// packed pair the throughput table measured share their GPUs.
		if job.GPUs > 1 && *m != 1000 && !(r.JobType != "" && *m == 500) {
			return Job{}, model.Errorf("gpu_milli", "a job of %d GPUs takes whole GPUs: gpu_milli must be 1000 or left out", job.GPUs)
		}
		if job.GPUs == 0 {
			return Job{}, model.Errorf("gpu_milli", "a CPU-only job (gpus 0) takes no GPU share")
		}
		job.Milli = int(*m)
		job.Util = *m / 10
	}
	if r.Util != nil {
		job.Util = *r.Util
	}
	if job.Util < 0 || job.Util > 100 {
		return Job{}, model.Errorf("util", "must be a percentage between 0 and 100, not %v", job.Util)
	}
	if job.GPUs > 0 {
		if r.VRAM == nil && job.Milli == 0 && (r.JobType != "" || r.Steps != nil) {
			job.Milli = 1000 // a whole GPU (policy.MilliPerGPU): a typed job's unless told
		}
		if r.VRAM == nil && job.Milli == 0 {
			return Job{}, model.Errorf("vram", "required for a GPU job: the VRAM per GPU, e.g. \"12GB\" (or give gpu_milli, the share of each GPU)")
		}
		if r.VRAM != nil && *r.VRAM <= 0 {
			return Job{}, model.Errorf("vram", "must be positive")
		}
		if r.VRAM != nil && model.Bytes(*r.VRAM) < model.MB {
			// A bare number is bytes: "vram":12 is 12 bytes, surely meant
			// as 12GB; no GPU job holds less than a megabyte.
			return Job{}, model.Errorf("vram", "%d bytes is less than 1MB: give the size with its unit, e.g. \"%dGB\"",
				int64(*r.VRAM), int64(*r.VRAM))
		}
		if r.VRAM != nil && model.Bytes(*r.VRAM) > MaxVRAM {
			return Job{}, model.Errorf("vram", "at most %s per GPU, not %s", MaxVRAM, model.Bytes(*r.VRAM))
		}
		if r.VRAM != nil {
			job.VRAM = model.Bytes(*r.VRAM)
		}
	} else if r.VRAM != nil && *r.VRAM != 0 {
		return Job{}, model.Errorf("vram", "a CPU-only job (gpus 0) takes no VRAM")
	}
	if r.JobType != "" || r.Steps != nil {
		var fe *model.FieldError
		if job, fe = r.typedJob(job); fe != nil {
			return Job{}, fe
		}
	} else {
		if r.Duration == "" {
			return Job{}, model.Errorf("duration", "required: the run time at reference speed, e.g. \"30m\"")
		}
		d, err := time.ParseDuration(r.Duration)
		if err != nil {
			return Job{}, model.Errorf("duration", "%q is not a duration (use Go durations such as 4h or 30m)", r.Duration)
		}
		if d <= 0 {
			return Job{}, model.Errorf("duration", "must be positive, not %s", r.Duration)
		}
		if d > MaxDuration {
			return Job{}, model.Errorf("duration", "at most %s (ten years), not %s", MaxDuration, r.Duration)
		}
		job.Duration = d
		if r.Checkpoint != "" {
			c, err := time.ParseDuration(r.Checkpoint)
			if err != nil || c < 0 {
				return Job{}, model.Errorf("checkpoint", "%q is not a non-negative duration", r.Checkpoint)
			}
			if c > MaxDuration {
				return Job{}, model.Errorf("checkpoint", "at most %s, not %s", MaxDuration, r.Checkpoint)
			}
			job.Checkpoint = c
		}
	}
	if job.CPU < 0 || job.CPU > MaxCPU || job.CPU != job.CPU {
		return Job{}, model.Errorf("cpu", "must be a number of cores from 0 to %d, not %v", MaxCPU, job.CPU)
	}
	if job.Memory < 0 || job.Memory > MaxMemory {
		return Job{}, model.Errorf("memory", "must be from 0 to %s, not %s", MaxMemory, job.Memory)
	}
	for i, name := range job.Models {
		m, err := model.LookupModel(name)
		if err != nil {
			return Job{}, model.Errorf("models", "%v", err)
		}
		job.Models[i] = m.Name
	}
	if job.GPU != "" && !model.ValidToken(job.GPU) {
		return Job{}, model.Errorf("gpu", "%q is not a GPU id", job.GPU)
	}
	if job.Node != "" && !model.ValidToken(job.Node) {
		return Job{}, model.Errorf("node", "%q is not a node id", job.Node)
	}
	if job.GPU != "" && job.GPUs != 1 {
		return Job{}, model.Errorf("gpu", "pinning to one GPU needs gpus 1")
	}
	return job, nil
}

// MaxSteps bounds a typed job's steps (10^15: beyond any run's).
const MaxSteps = 1e15

// typedJob finishes Job for a typed job: its type and steps checked, the
// fields its rate decides refused.
func (r *SubmitRequest) typedJob(job Job) (Job, *model.FieldError) {
	switch {
	case r.JobType == "":
		return Job{}, model.Errorf("job_type", "required with steps: the job's type, as the cluster's throughput table names it (e.g. \"ResNet-18 (batch size 64)\")")
	case r.Steps == nil:
		return Job{}, model.Errorf("steps", "required with job_type: the steps the job runs to complete")
	case r.Duration != "":
		return Job{}, model.Errorf("duration", "not given with job_type: a typed job's run time comes from its steps and the throughput table's rates")
	case r.Checkpoint != "":
		return Job{}, model.Errorf("checkpoint", "not given with job_type: a typed job keeps every step it has run when stopped")
	case job.GPUs < 1:
		return Job{}, model.Errorf("gpus", "a typed job runs on GPUs: gpus (its scale factor) must be 1 or more, not %d", job.GPUs)
	}
	if fe := boundedText("job_type", r.JobType, MaxNameBytes); fe != nil {
		return Job{}, fe
	}
	// Not necessarily whole: Gavel's jobs run duration × rate steps.
	if s := *r.Steps; !(s >= 1 && s <= MaxSteps) {
		return Job{}, model.Errorf("steps", "must be a number of steps from 1 to %g, not %v", float64(MaxSteps), s)
	}
	job.JobType, job.Steps = r.JobType, *r.Steps
	return job, nil
}

// MaxReplicas bounds a training job's replicas (one GPU each).
const MaxReplicas = 4096

// trainingJob is Job for a distributed training job: what the request
// shares with any job (name, tenant, priority, preemptible), its training
// fields checked, and the fields its model decides refused.
func (r *SubmitRequest) trainingJob() (Job, *model.FieldError) {
	t := *r.Training
	for _, f := range []struct {
		name  string
		given bool
	}{{"duration", r.Duration != ""}, {"vram", r.VRAM != nil}, {"gpus", r.GPUs != nil}, {"gpu_milli", r.GPUMilli != nil},
		{"util", r.Util != nil}, {"checkpoint", r.Checkpoint != ""}, {"gpu", r.GPU != ""}, {"node", r.Node != ""},
		{"models", len(r.Models) > 0}, {"cpu", r.CPU != nil}, {"memory", r.Memory != nil},
		{"job_type", r.JobType != ""}, {"steps", r.Steps != nil}, {"perf_class", r.PerfClass != ""}} {
		if f.given {
			return Job{}, model.Errorf(f.name, "not given with training: a training job's %s comes from its application's model and its placement", f.name)
		}
	}
	if t.App == "" || len(t.App) > MaxNameBytes || !model.ValidToken(t.App) {
		return Job{}, model.Errorf("training.app", "%q is not an application name (bert, cifar10, deepspeech2, imagenet, ncf, yolov3 in the Pollux data)", clip(t.App))
	}
	if t.Batch < 1 {
		return Job{}, model.Errorf("training.batch", "must be a positive batch size, not %d", t.Batch)
	}
	if t.Replicas < 1 || t.Replicas > MaxReplicas {
		return Job{}, model.Errorf("training.replicas", "must be from 1 to %d, not %d", MaxReplicas, t.Replicas)
	}
	// A training job's plain fields: r with them left out is a GPU job.
	plain := *r
	plain.Training = nil
	gpus, milli, dur := 1, float64(1000), "1s"
	plain.GPUs, plain.GPUMilli, plain.Duration = &gpus, &milli, dur
	zero := 0.0
	var none Size
	plain.CPU, plain.Memory = &zero, &none
	job, fe := plain.Job()
	if fe != nil {
		return Job{}, fe
	}
	job.GPUs, job.Duration, job.Util, job.Training = t.Replicas, 0, 100, &t
	return job, nil
}
