package model

// Training is a distributed training job of the Pollux paper's kind
// (../shared/traces/pollux/MODEL.md §4): an application whose measured
// profile gives its step time on a placement, a target batch size and a
// replica count (one GPU each, spread over nodes). Its progress is in the
// application's units (B0-equivalent steps, MODEL.md §3.2), not seconds.
type Training struct {
	App      string `json:"app"`
	Batch    int    `json:"batch"`
	Replicas int    `json:"replicas"`
}

// TrainingState is a training job's state as it travels between the
// scheduler and the GPU actors that run it: everything that stepping the
// job (MODEL.md §4.5) and the policies read, so that a job handed from one
// process to another steps exactly as it would have in one. Times are
// whole seconds of the run (MODEL.md's clock, 0 at the run's start).
// JSON carries every float64 exactly (shortest round-trip form).
type TrainingState struct {
	// ClockS is the job's own clock: the run's second it was stepped to.
	ClockS int `json:"clock_s"`
	// RescaleS is the restart delay still to serve.
	RescaleS int `json:"rescale_s,omitempty"`
	// Placement is replicas per node, in the job's node order (empty:
	// not placed).
	Placement []int `json:"placement,omitempty"`
	// LocalBatch and AccumSteps are its configuration on the placement
	// (MODEL.md §4.2: atomic batch a, accumulation steps k).
	LocalBatch int     `json:"local_batch,omitempty"`
	AccumSteps int     `json:"accum_steps,omitempty"`
	Progress   float64 `json:"progress"`
	Epoch      int     `json:"epoch"`
	// Done is set with CompletionS, the second it completed.
	Done        bool `json:"done,omitempty"`
	CompletionS int  `json:"completion_s,omitempty"`
	// ServiceGPUS is the GPU-seconds it attained (restart delays
	// included); RestartGPUS the GPU-seconds its restart delays held.
	ServiceGPUS int `json:"service_gpu_s"`
	RestartGPUS int `json:"restart_gpu_s,omitempty"`
	// Restarts is -1 until its first placement; FirstAllocS the second of
	// that placement (-1 until then); Preemptions the times its GPUs were
	// taken before it completed.
	Restarts    int `json:"restarts"`
	FirstAllocS int `json:"first_alloc_s"`
	Preemptions int `json:"preemptions,omitempty"`
	// Approximate counts the steps taken at an interpolated step time.
	Approximate int `json:"approximate,omitempty"`
	// Elastic is a Pollux job's own state (nil for Tiresias' and
	// Optimus' jobs, which keep their batch size).
	Elastic *ElasticState `json:"elastic,omitempty"`
}

// ElasticState is what a Pollux (elastic) job keeps besides the common
// state (../shared/traces/pollux/MODEL.md §8): the step and sync times of
// every configuration it has run in, in the order it met them, the
// throughput model fitted to them, the gradient statistics of its last
// step and, for ncf, its fixed batch size.
type ElasticState struct {
	Profile []Observation `json:"profile,omitempty"`
	Perf    *PerfFit      `json:"perf,omitempty"`
	GradSqr float64       `json:"grad_sqr"`
	GradVar float64       `json:"grad_var"`
	Fixed   int           `json:"fixed_batch,omitempty"`
}

// Observation is one configuration's measured step and sync time.
type Observation struct {
	Nodes    int     `json:"nodes"`
	Replicas int     `json:"replicas"`
	Local    int     `json:"local_batch"`
	Step     float64 `json:"step_s"`
	Sync     float64 `json:"sync_s"`
}

// PerfFit is the fitted throughput model's parameters (MODEL.md §8).
type PerfFit struct {
	AlphaC float64 `json:"alpha_c"`
	BetaC  float64 `json:"beta_c"`
	AlphaN float64 `json:"alpha_n"`
	BetaN  float64 `json:"beta_n"`
	AlphaR float64 `json:"alpha_r"`
	BetaR  float64 `json:"beta_r"`
	Gamma  float64 `json:"gamma"`
}
