package events

import (
	"encoding/json"
	"time"

	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/vram"
)

// ErrorReply is the one error shape of every request/reply subject.
type ErrorReply struct {
	Error *model.FieldError `json:"error"`
}

// SubmitReply answers <p>.job.submit.
type SubmitReply struct {
	JobID string `json:"job_id"`
	State string `json:"state"`
	// Node and GPUs say where a job placed at once went.
	Node string   `json:"node,omitempty"`
	GPUs []string `json:"gpu_ids,omitempty"`
	// Reason says why a job was rejected (a replay drops a job that fits nowhere).
	Reason string `json:"reason,omitempty"`
}

// SubmitAnswer is either answer of <p>.job.submit as a client reads it:
// a SubmitReply, or an error with the job it names when the submission
// made one (rejected; cancelled when its record could not be stored).
type SubmitAnswer struct {
	ErrorReply
	SubmitReply
}

// CallRef is the call an answer to a control names (ControlReply.Call),
// read alone where only the call matters (a batch's answers share one
// reply subject).
type CallRef struct {
	Call string `json:"call"`
}

// OpRef is a control's operation (Control.Op), read alone where only the
// operation matters (a GPU actor looking for a fault while hung).
type OpRef struct {
	Op string `json:"op"`
}

// ChaosRequest is the body of every <p>.chaos.<action>: the GPU it targets (and
// its node where GPU ids repeat across nodes), and where the action takes
// them, a duration ("30s"), a delay ("200ms") or a drop fraction (0.2).
type ChaosRequest struct {
	GPU      string   `json:"gpu,omitempty"`
	Node     string   `json:"node,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	Duration string   `json:"duration,omitempty"`
	Delay    string   `json:"delay,omitempty"`
	Drop     *float64 `json:"drop,omitempty"`
	// Seed seeds a drop's draws (so a chaos run can be replayed).
	Seed uint64 `json:"seed,omitempty"`
}

// ChaosKillReply answers a kill: the GPU's next incarnation and the jobs it lost.
type ChaosKillReply struct {
	OK          bool     `json:"ok"`
	GPU         string   `json:"gpu"`
	Node        string   `json:"node"`
	Incarnation int      `json:"incarnation"`
	LostJobs    []string `json:"lost_jobs"`
}

// ChaosReply answers hang, partition, delay, drop and the scheduler's
// actions (kill-scheduler, hang-scheduler, partition-scheduler,
// failover-scheduler).
type ChaosReply struct {
	OK          bool    `json:"ok"`
	Action      string  `json:"action"`
	GPU         string  `json:"gpu,omitempty"`
	Node        string  `json:"node,omitempty"`
	Incarnation int     `json:"incarnation,omitempty"`
	Duration    string  `json:"duration,omitempty"`
	Delay       string  `json:"delay,omitempty"`
	Drop        float64 `json:"drop,omitempty"`
	// QueuedLost and Running are what a killed scheduler held: running
	// jobs are re-learned from the GPU actors, queued ones are lost.
	QueuedLost int `json:"queued_lost,omitempty"`
	// Queued is what a durable scheduler held queued (kept, not lost).
	Queued  int    `json:"queued,omitempty"`
	Running int    `json:"running,omitempty"`
	Note    string `json:"note,omitempty"`
}

// JobRef names a job: the body of job.get, job.cancel and sched.explain.
type JobRef struct {
	JobID string `json:"job_id"`
}

// Transition is one step of a job's history.
type Transition struct {
	State   string    `json:"state"`
	SimTime time.Time `json:"simtime"`
	Reason  string    `json:"reason,omitempty"`
}

// JobInfo is a job as the scheduler knows it: the payload of job events,
// job.get (with its history), job.list and the snapshot.
type JobInfo struct {
	JobID    string         `json:"job_id"`
	Name     string         `json:"name"`
	Tenant   string         `json:"tenant"`
	Priority model.Priority `json:"priority"`
	State    string         `json:"state"`
	// GPUs is the number of GPUs the job asks for.
	GPUs int `json:"gpus"`
	// VRAM is bytes per GPU.
	VRAM int64 `json:"vram"`
	// Milli is the share of each GPU reserved, in thousandths (0: by VRAM).
	Milli       int      `json:"gpu_milli,omitempty"`
	Models      []string `json:"models,omitempty"`
	Util        float64  `json:"util"`
	CPU         float64  `json:"cpu"`
	Memory      int64    `json:"memory"`
	Duration    string   `json:"duration"`
	Preemptible bool     `json:"preemptible"`
	Checkpoint  string   `json:"checkpoint,omitempty"`
	// Node and GPUIDs say where the job is placed (or last ran).
	Node   string   `json:"node,omitempty"`
	GPUIDs []string `json:"gpu_ids,omitempty"`
	// ProgressS is the work done in reference seconds; WorkS the total.
	ProgressS   float64    `json:"progress_s"`
	WorkS       float64    `json:"work_s"`
	Preemptions int        `json:"preemptions"`
	SubmittedAt time.Time  `json:"submitted_at"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`
	// FirstStartedAt is when the job first ran (StartedAt is its latest start).
	FirstStartedAt *time.Time `json:"first_started_at,omitempty"`
	// RunS is the simulated seconds the job has run, over all its stints;
	// Slowdown is RunS over the time the same work takes alone on the same
	// GPUs (1: no slowdown from co-location); LostWorkS is work, in
	// reference seconds, lost to preemptions and failures (redone later).
	RunS      float64 `json:"run_s"`
	Slowdown  float64 `json:"slowdown"`
	LostWorkS float64 `json:"lost_work_s"`
	// Reason says why a job waits (pending), or why it ended as it did.
	Reason string `json:"reason,omitempty"`
	// Preemptor and Victims are set on preempted events and on the preemptor's placed event.
	Preemptor string       `json:"preemptor,omitempty"`
	Victims   []string     `json:"victims,omitempty"`
	History   []Transition `json:"history,omitempty"`
	// HistoryDropped counts the transitions dropped from the middle of a
	// long history (its first few and its latest are kept: MaxHistory).
	HistoryDropped int `json:"history_dropped,omitempty"`
	// Training and TrainingState are a training job's description and
	// its state as the scheduler last had it from its GPUs.
	Training      *model.Training      `json:"training,omitempty"`
	TrainingState *model.TrainingState `json:"training_state,omitempty"`
	// JobType and Steps are a typed job's type and steps in all (then
	// ProgressS and WorkS count steps, not seconds, and duration is "").
	JobType string  `json:"job_type,omitempty"`
	Steps   float64 `json:"steps,omitempty"`
	// FinishS is, on a cluster running Gavel's rounds, when the job
	// completed in seconds since the run's start, as Gavel's float times
	// say it (ended_at is the clock's nanosecond at or after it).
	FinishS *float64 `json:"finish_s,omitempty"`
}

// JobListRequest filters job.list; every field is optional.
type JobListRequest struct {
	State  string `json:"state,omitempty"`
	Tenant string `json:"tenant,omitempty"`
	Page   int    `json:"page,omitempty"`
}

// JobListReply is one page of jobs, oldest submission first.
type JobListReply struct {
	Jobs  []JobInfo `json:"jobs"`
	Page  int       `json:"page"`
	Pages int       `json:"pages"`
	Total int       `json:"total"`
}

// StrategyRequest reads ({}) or sets the placement policy.
type StrategyRequest struct {
	Policy string `json:"policy,omitempty"`
	// Queue switches the queue order (policy.QueueSort): "priority",
	// "fifo", "las", "srtf", "sjf".
	Queue string `json:"queue,omitempty"`
	// Filters sets the filters in force (policy.Filter), comma-separated:
	// "capacity"; "none" clears them.
	Filters string `json:"filters,omitempty"`
	// Oversubscribe sets how far past 100 % of its compute binpack,
	// spread, first-fit, smallest-fit and the capacity filter may fill a
	// GPU: 1 none, 2 up to 200 %, "inf" no limit.
	Oversubscribe *Ratio `json:"oversubscribe,omitempty"`
}

// StrategyReply gives the policy in force and the ones available.
type StrategyReply struct {
	Policy    string   `json:"policy"`
	Previous  string   `json:"previous,omitempty"`
	Available []string `json:"available"`
	// Queue is the queue order in force, PreviousQueue the one a switch
	// replaced, Queues every order there is.
	Queue         string   `json:"queue"`
	PreviousQueue string   `json:"previous_queue,omitempty"`
	Queues        []string `json:"queues"`
	// Filters are the filters in force ("none"), PreviousFilters the ones
	// a switch replaced, FilterNames every filter there is.
	Filters         string   `json:"filters"`
	PreviousFilters string   `json:"previous_filters,omitempty"`
	FilterNames     []string `json:"filter_names"`
	// Oversubscribe is the ratio in force (PreviousOversubscribe the one a
	// switch replaced); ComputeBound tells whether the policy in force is
	// bound by it (the paper's policies are not: gpu_milli bounds them).
	Oversubscribe         Ratio  `json:"oversubscribe"`
	PreviousOversubscribe *Ratio `json:"previous_oversubscribe,omitempty"`
	ComputeBound          bool   `json:"compute_bound"`
}

// Candidate is one scored option of a placement decision.
type Candidate struct {
	Node  string   `json:"node"`
	GPUs  []string `json:"gpus"`
	Score float64  `json:"score"`
	// Ranked is what the GPU rankers (binpack, spread, first-fit,
	// smallest-fit) order by, as the policy saw it: the first GPU's
	// utilisation, VRAM used and size ("util 45%, 20GB of 40GB used"),
	// then the GPU id — so equal scores still say why one came first.
	Ranked string `json:"ranked,omitempty"`
}

// Decision explains one placement: the payload of sched.decision events and sched.explain.
type Decision struct {
	JobID      string      `json:"job_id"`
	Policy     string      `json:"policy"`
	Node       string      `json:"node,omitempty"`
	GPUs       []string    `json:"gpus,omitempty"`
	Candidates []Candidate `json:"candidates,omitempty"`
	Victims    []string    `json:"victims,omitempty"`
	Refusals   []string    `json:"refusals,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	State      string      `json:"state,omitempty"`
	// Pinned is the GPU (or node) the submission pinned the job to, when
	// it did: the placement had that one candidate. Unpinned is where the
	// policy alone would have put it ("": nowhere else fitted).
	Pinned   string `json:"pinned,omitempty"`
	Unpinned string `json:"unpinned_choice,omitempty"`
}

// PolicyChanged is the payload of sched.policy events.
type PolicyChanged struct {
	Policy   string `json:"policy"`
	Previous string `json:"previous"`
	// Queue is the queue order in force; PreviousQueue the one before,
	// when this change switched it.
	Queue         string `json:"queue,omitempty"`
	PreviousQueue string `json:"previous_queue,omitempty"`
	// Filters are the filters in force ("none" or omitted: none);
	// PreviousFilters the ones before, when this change switched them.
	Filters         string `json:"filters,omitempty"`
	PreviousFilters string `json:"previous_filters,omitempty"`
	// Oversubscribe is the oversubscription ratio in force;
	// PreviousOversubscribe the one before, when this change switched it.
	Oversubscribe         Ratio  `json:"oversubscribe,omitempty"`
	PreviousOversubscribe *Ratio `json:"previous_oversubscribe,omitempty"`
}

// Pending is the payload of sched.pending events: why a job waits.
type Pending struct {
	JobID  string `json:"job_id"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// GPUJob is one job (or reservation) on a GPU.
type GPUJob struct {
	JobID    string         `json:"job_id"`
	Name     string         `json:"name"`
	Priority model.Priority `json:"priority"`
	// State is "reserved" (not yet committed) or "running".
	State  string  `json:"state"`
	VRAM   int64   `json:"vram"`
	Offset int64   `json:"offset"`
	Util   float64 `json:"util"`
	// Milli is the share of the GPU the job holds, in thousandths.
	Milli int `json:"gpu_milli"`
	// ProgressS and WorkS are reference seconds done and in all; Rate is
	// reference seconds per simulated second now (model speed × slowdown).
	ProgressS float64 `json:"progress_s"`
	WorkS     float64 `json:"work_s"`
	Rate      float64 `json:"rate"`
	// Assignment is the job as the scheduler sent it: in describe replies
	// asked WithSpecs only.
	Assignment *Assignment `json:"assignment,omitempty"`
	// Training is a training job's state, stepped to the last interval
	// its GPU has run (then ProgressS and WorkS are in the application's
	// progress units, not seconds, and Rate is 0).
	Training *model.TrainingState `json:"training,omitempty"`
	// JobType is a typed job's type: then ProgressS and WorkS count steps
	// and Rate is steps per second, the throughput table's rate for it on
	// this GPU (alone, or packed with the typed job it shares the GPU with).
	JobType string `json:"job_type,omitempty"`
}

// GPUStatus is the payload of gpu.status (published on every change) and
// gpu.up events, and the reply to a describe request.
type GPUStatus struct {
	GPU             string `json:"gpu"`
	Node            string `json:"node"`
	Model           string `json:"model"`
	Incarnation     int    `json:"incarnation"`
	Version         uint64 `json:"version"`
	VRAMModel       string `json:"vram_model"`
	VRAMTotal       int64  `json:"vram_total"`
	VRAMUsed        int64  `json:"vram_used"`
	VRAMLargestFree int64  `json:"vram_largest_free"`
	// MilliUsed is the share of the GPU its jobs hold, in thousandths.
	MilliUsed int     `json:"milli_used"`
	Util      float64 `json:"util"`
	PowerW    float64 `json:"power_w"`
	EnergyJ   float64 `json:"energy_j"`
	// Change says what caused this status ("reserved", "committed",
	// "completed", "aborted", "expired", "preempted", "up") and JobID which job.
	Change string `json:"change,omitempty"`
	JobID  string `json:"job_id,omitempty"`
	// Reason says why a GPU went down, or rejoined (gpu.down, gpu.up).
	Reason string   `json:"reason,omitempty"`
	Jobs   []GPUJob `json:"jobs"`
	// Ended lists the jobs that ended on this GPU lately (describe
	// replies asked WithSpecs only).
	Ended []EndedJob `json:"ended,omitempty"`
	// Training is the state of the training job the change took off the
	// GPU (completed, preempted, released), stepped to when it left.
	Training *model.TrainingState `json:"training,omitempty"`
	// Variability is the GPU's own pace per application class
	// (model.GPUSpec.Variability; absent: none), vouched for by its node.
	Variability map[string]float64 `json:"variability,omitempty"`
}

// EndedJob is a job that left a GPU: how ("completed", "fenced",
// "preempted"...) and with how much work done.
type EndedJob struct {
	JobID     string  `json:"job_id"`
	Change    string  `json:"change"`
	ProgressS float64 `json:"progress_s"`
	// At is when it ended, on the GPU's clock (its events' simtime:
	// simulated time on a scaled or virtual clock); Assignment the job as
	// the scheduler sent it, so that a scheduler that never knew it can
	// account for it.
	At         time.Time   `json:"at"`
	Assignment *Assignment `json:"assignment,omitempty"`
	// Training is a training job's state when it left (a completion's
	// carries its completion second), for a scheduler that learns of the
	// end only from this list.
	Training *model.TrainingState `json:"training,omitempty"`
}

// GPUOOMEvent is the payload of gpu.oom: a reservation the GPU refused.
type GPUOOMEvent struct {
	GPU    string `json:"gpu"`
	Node   string `json:"node"`
	JobID  string `json:"job_id"`
	VRAM   int64  `json:"vram"`
	Free   int64  `json:"free"`
	Hole   int64  `json:"largest_free"`
	Reason string `json:"reason"`
}

// HeartbeatGPU is one GPU's liveness in a node heartbeat.
type HeartbeatGPU struct {
	GPU         string `json:"gpu"`
	Incarnation int    `json:"incarnation"`
	Alive       bool   `json:"alive"`
	Jobs        int    `json:"jobs"`
}

// NodeLifecycle is the payload of evt.node.<node>.up and .down, published
// by the scheduler: a node it sees appear, or whose heartbeats stopped for a
// lease (its GPUs are declared dead with it).
type NodeLifecycle struct {
	Node string `json:"node"`
	// Change is "joined" (first heartbeat), "rejoined" (a heartbeat after
	// it was declared down) or "lease-expired".
	Change string `json:"change"`
	Reason string `json:"reason,omitempty"`
	GPUs   int    `json:"gpus,omitempty"`
}

// NodeHeartbeat is the payload of node.heartbeat: the node's resources and
// the batched liveness of its GPUs.
type NodeHeartbeat struct {
	Node        string            `json:"node"`
	Incarnation int               `json:"incarnation"`
	Labels      map[string]string `json:"labels,omitempty"`
	CPUTotal    float64           `json:"cpu_total"`
	CPUUsed     float64           `json:"cpu_used"`
	MemoryTotal int64             `json:"memory_total"`
	MemoryUsed  int64             `json:"memory_used"`
	GPUs        []HeartbeatGPU    `json:"gpus"`
	// Beat numbers the node's heartbeats; the lease grant names it.
	Beat uint64 `json:"beat,omitempty"`
	// BatchCtl says the node takes its controls batched on its batch
	// subject (Subjects.NodeBatch); a node that does not say so gets
	// each on its actor's control subject.
	BatchCtl bool `json:"batch_ctl,omitempty"`
}

// Metrics is the payload of the periodic metrics event and the snapshot summary.
type Metrics struct {
	Policy string `json:"policy"`
	// Queue is the queue order in force.
	Queue      string `json:"queue,omitempty"`
	Nodes      int    `json:"nodes"`
	NodesAlive int    `json:"nodes_alive"`
	GPUs       int    `json:"gpus"`
	GPUsBusy   int    `json:"gpus_busy"`
	// GPUsAlive counts the GPUs whose node last reported them alive.
	GPUsAlive     int     `json:"gpus_alive"`
	UtilMean      float64 `json:"util_mean"`
	VRAMUsed      int64   `json:"vram_used"`
	VRAMTotal     int64   `json:"vram_total"`
	JobsQueued    int     `json:"jobs_queued"`
	JobsRunning   int     `json:"jobs_running"`
	JobsCompleted int     `json:"jobs_completed"`
	JobsRejected  int     `json:"jobs_rejected"`
	JobsCancelled int     `json:"jobs_cancelled"`
	Preemptions   int     `json:"preemptions"`
	EnergyKWh     float64 `json:"energy_kwh"`
	PowerW        float64 `json:"power_w"`
	// FragmentedVRAM is free VRAM outside each GPU's largest hole, summed.
	FragmentedVRAM int64 `json:"fragmented_vram"`
	// VRAMFragmentation is FragmentedVRAM as a fraction of the free VRAM
	// (0: every GPU's free VRAM is one block).
	VRAMFragmentation float64 `json:"vram_fragmentation"`
	// MilliUsed and MilliTotal are the GPU share held and in all, in
	// thousandths of a GPU; Allocation is their ratio (the paper's
	// allocation ratio).
	MilliUsed  int64   `json:"milli_used"`
	MilliTotal int64   `json:"milli_total"`
	Allocation float64 `json:"allocation"`
	// FragAmount is the FGD paper's cluster fragmentation F(M) in GPUs:
	// the idle GPU share the workload's typical classes cannot use;
	// FragRatio is F(M) as a fraction of the idle GPU share.
	FragAmount float64 `json:"frag_gpus"`
	FragRatio  float64 `json:"frag_ratio"`
	// WorkloadClasses is how many typical classes F(M) is measured against.
	WorkloadClasses int `json:"workload_classes"`
	// GPUDeaths counts GPUs declared dead (lease) or reported down (crash)
	// by this scheduler; JobsLost the running jobs they took down;
	// JobsAdopted the running jobs re-learned from GPUs after a scheduler
	// restart; StaleIgnored the messages ignored from dead incarnations.
	GPUDeaths    int `json:"gpu_deaths"`
	JobsLost     int `json:"jobs_lost"`
	JobsAdopted  int `json:"jobs_adopted"`
	StaleIgnored int `json:"stale_ignored"`
	// Incarnation is the scheduler's incarnation.
	Incarnation int `json:"scheduler_incarnation"`
	// GPUsUnknown counts the GPUs the scheduler knows exist but has not
	// read yet (after a restart; not in GPUs). Settling says the scheduler
	// is still re-learning the cluster (such GPUs, or running jobs not
	// read back yet): the figures above are partial, not the cluster's —
	// a dashboard keeps its last known ones, a series skips the sample.
	GPUsUnknown int  `json:"gpus_unknown,omitempty"`
	Settling    bool `json:"settling,omitempty"`
}

// SnapshotRequest asks for one page of the cluster state.
type SnapshotRequest struct {
	Page int `json:"page"`
	// SummaryOnly asks for the summary alone (no GPUs or jobs listed):
	// cheap to ask of a 100,000-GPU cluster many times a second.
	SummaryOnly bool `json:"summary_only,omitempty"`
}

// SnapshotGPU is one GPU in a snapshot.
type SnapshotGPU struct {
	GPUStatus
	Allocs []vram.Alloc `json:"allocs"`
	Alive  bool         `json:"alive"`
	// Unknown marks a GPU the scheduler knows exists (its node names it,
	// or a job ran there) but has not read yet, as after a scheduler
	// restart: its figures are not known, which is not "down".
	Unknown bool `json:"unknown,omitempty"`
	// VRAMFragmentation is the GPU's VRAM-layout fragmentation: 1 −
	// largest free hole / free VRAM (0 when the free VRAM is one block or
	// none is free).
	VRAMFragmentation float64 `json:"vram_fragmentation"`
	// FragGPUs is the GPU's part of its node's F_n(M), in GPUs: its free
	// share when the node's typical classes cannot use it, weighted by
	// class popularity.
	FragGPUs float64 `json:"frag_gpus"`
	// Stale marks a GPU the scheduler has not read yet (Unknown) shown
	// with the last figures an observer knew of it: set by the observer,
	// never by the scheduler.
	Stale bool `json:"stale,omitempty"`
	// PerfLevels is the GPU's performance level per application class
	// (0 the fastest) among the cluster's GPUs with a multiplier for the
	// class (its variability): PAL's K-means levels
	// (model.PerformanceLevels). Absent on a cluster without variability.
	PerfLevels map[string]int `json:"perf_levels,omitempty"`
}

// Snapshot answers cluster.snapshot: the summary, and page Page of Pages of
// the GPUs, the running jobs and the queue.
type Snapshot struct {
	SimTime time.Time `json:"simtime"`
	// Speed is simulated seconds per wall second (a scaled clock; absent
	// on a virtual one): a GPU node joining from another process runs its
	// clock from SimTime at this speed.
	Speed     float64       `json:"speed,omitempty"`
	Policy    string        `json:"policy"`
	VRAMModel string        `json:"vram_model"`
	Summary   Metrics       `json:"summary"`
	Page      int           `json:"page"`
	Pages     int           `json:"pages"`
	GPUs      []SnapshotGPU `json:"gpus"`
	Running   []JobInfo     `json:"running"`
	Queue     []JobInfo     `json:"queue"`
	// PerfLevelCounts is how many performance levels each application
	// class has (SnapshotGPU.PerfLevels); absent without variability.
	PerfLevelCounts map[string]int `json:"perf_level_counts,omitempty"`
}

// Control operations on <p>.gpu.<node>.<gpu>.ctl and <p>.node.<node>.ctl.
const (
	OpReserve  = "reserve"
	OpCommit   = "commit"
	OpAbort    = "abort"
	OpPreempt  = "preempt"
	OpRelease  = "release"
	OpDescribe = "describe"
	// OpKill crashes a GPU actor (chaos): its supervisor restarts it,
	// empty, with the next incarnation after a backoff; the reply's Stopped
	// lists the jobs it lost. On the scheduler's ctl subject it crashes the
	// scheduler.
	OpKill = "kill"
	// OpChaos applies Control.Chaos to a GPU actor: hang, partition, delay
	// or drop.
	OpChaos = "chaos"
	// OpStoreDown and OpStoreUp, on the scheduler's ctl subject, are the
	// control plane's word that the job journal's store cannot take
	// writes (its disk is full; Control.Reason says so) and that it can
	// again: meanwhile submissions are refused on "store" at once.
	OpStoreDown = "store-down"
	OpStoreUp   = "store-up"
)

// ChaosControl is what a GPU actor is told to suffer. DurationMS bounds
// it in wall time (0: until told otherwise, for delay and drop); DelayMS
// is the added latency of its outgoing messages; Drop the fraction of
// them lost; Seed seeds the drops.
type ChaosControl struct {
	Action     string  `json:"action"`
	DurationMS int64   `json:"duration_ms,omitempty"`
	DelayMS    int64   `json:"delay_ms,omitempty"`
	Drop       float64 `json:"drop,omitempty"`
	Seed       uint64  `json:"seed,omitempty"`
}

// LeaseGrant answers a node heartbeat: the GPUs (by id and incarnation)
// whose lease the scheduler renews, for LeaseMS of wall time counted from
// when the node sent heartbeat Beat. A GPU not listed is not renewed.
type LeaseGrant struct {
	Node    string         `json:"node"`
	Beat    uint64         `json:"beat"`
	LeaseMS int64          `json:"lease_ms"`
	GPUs    []HeartbeatGPU `json:"gpus"`
}

// ChaosEvent is the payload of evt.chaos.<action>: what was done to
// which actor, and when (the envelope's time), so that a checker can time
// detection and tell expected gaps (drop) from lost events.
type ChaosEvent struct {
	Action   string  `json:"action"`
	GPU      string  `json:"gpu,omitempty"`
	Node     string  `json:"node,omitempty"`
	Duration string  `json:"duration,omitempty"`
	Delay    string  `json:"delay,omitempty"`
	Drop     float64 `json:"drop,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	// Failed says why an action announced just before did not happen
	// (the target did not answer or refused): the event is published
	// before the action, so that it precedes the failure it causes.
	Failed string `json:"failed,omitempty"`
}

// Totals are the cluster's running totals as the scheduler reports them
// (Metrics): they only grow, across scheduler restarts too — a restarted
// scheduler starts from its predecessor's (its post-mortem, or the job
// journal's last copy), so a plot of them never drops at a restart.
type Totals struct {
	Completed    int     `json:"completed,omitempty"`
	Rejected     int     `json:"rejected,omitempty"`
	Cancelled    int     `json:"cancelled,omitempty"`
	Preemptions  int     `json:"preemptions,omitempty"`
	GPUDeaths    int     `json:"gpu_deaths,omitempty"`
	JobsLost     int     `json:"jobs_lost,omitempty"`
	JobsAdopted  int     `json:"jobs_adopted,omitempty"`
	StaleIgnored int     `json:"stale_ignored,omitempty"`
	EnergyJ      float64 `json:"energy_j,omitempty"`
}

// SchedLifecycle is the payload of evt.sched.up and evt.sched.down.
type SchedLifecycle struct {
	Incarnation int    `json:"incarnation"`
	Reason      string `json:"reason,omitempty"`
	// Queued and Running are the jobs the scheduler held when it went
	// down: a restarted scheduler re-learns the running ones from the GPU
	// actors; the queued ones are lost unless the queue is Durable (kept
	// in the job journal, from which the next scheduler takes it back).
	Queued  int    `json:"queued,omitempty"`
	Durable bool   `json:"durable,omitempty"`
	Running int    `json:"running,omitempty"`
	Policy  string `json:"policy,omitempty"`
	Queue   string `json:"queue,omitempty"`
	// Totals are the totals it had reported (its successor goes on from
	// them).
	Totals *Totals `json:"totals,omitempty"`
	// RunningJobs are the ids of the jobs it was running (and those it
	// inherited and had not accounted for yet): its successor accounts for
	// each, whether a GPU still runs it, finished it, or lost it meanwhile.
	RunningJobs []RunningJob `json:"running_jobs,omitempty"`
	// LostJobs are the ids of the unfinished jobs it held that neither its
	// successor nor a GPU will know (queued, or being placed), when the
	// queue is not Durable: they are gone with it (a client must submit
	// them again). An observer counts them as ended here.
	LostJobs []string `json:"lost_jobs,omitempty"`
}

// RunningJob is a job a scheduler had running, and the placement it ran in.
type RunningJob struct {
	JobID     string `json:"job_id"`
	Placement string `json:"placement"`
	// CPUOnly is a running CPU-only job's own account: no GPU knows it to
	// read it back, so the successor resumes it from here.
	CPUOnly *CPUOnlyJob `json:"cpu_only,omitempty"`
}

// CPUOnlyJob is what a scheduler needs to go on running a CPU-only job
// its predecessor ran: the job, where it runs, when it ends.
type CPUOnlyJob struct {
	Spec      Job       `json:"spec"`
	Seq       uint64    `json:"seq"`
	Submitted time.Time `json:"submitted"`
	Node      string    `json:"node"`
	Started   time.Time `json:"started"`
	Ends      time.Time `json:"ends"`
}

// Assignment is what a GPU actor needs to run a job's share.
type Assignment struct {
	Name        string         `json:"name"`
	Priority    model.Priority `json:"priority"`
	VRAM        int64          `json:"vram"`
	Util        float64        `json:"util"`
	Milli       int            `json:"gpu_milli,omitempty"`
	WorkS       float64        `json:"work_s"`
	ProgressS   float64        `json:"progress_s"`
	CheckpointS float64        `json:"checkpoint_s,omitempty"`
	// Spec, Submitted and Seq are the job as the scheduler accepted it,
	// kept by the GPU so that a restarted scheduler can re-learn it.
	Spec      *Job      `json:"spec,omitempty"`
	Submitted time.Time `json:"submitted,omitzero"`
	Seq       uint64    `json:"seq,omitempty"`
	// Placement names this placement of the job (scheduler incarnation
	// and count): a record of how a stint ended is matched to the stint.
	Placement string `json:"placement,omitempty"`
	// Training makes the job a distributed training job's part on this
	// GPU (one replica): the GPU steps the job's model instead of
	// counting WorkS.
	Training *TrainingPart `json:"training,omitempty"`
	// Pace is the gang's iteration-time multiplier on its GPUs: the
	// slowest GPU's multiplier for the job's perf_class × the locality
	// penalty when the gang spans nodes (model.GangSlowdown), the same on
	// every GPU of the gang. The GPU runs the job at its rate ÷ Pace. 0:
	// 1 (no variability).
	Pace float64 `json:"pace,omitempty"`
}

// TrainingPart is a distributed training job's part on one GPU: the job,
// its state at the placement's start (its placement set, its restart
// delay charged) and the run's interval. Every GPU of the job steps the
// same state the same way, so each knows when the job completes; the
// state's clock is the run's second the placement starts at, and the GPU
// steps it whole intervals from there (MODEL.md §4.5, §5.1).
type TrainingPart struct {
	Job       model.Training      `json:"job"`
	SubmitS   int                 `json:"submit_s"`
	State     model.TrainingState `json:"state"`
	IntervalS int                 `json:"interval_s"`
	// Nodes is the job's allocation: the node of each of its replicas, in
	// the order the training round listed them. A restarted scheduler
	// reads it back from any one GPU: how many GPUs the job runs on, and
	// the allocation its round keeps (so it is not re-allocated, and
	// charged a restart, for nothing).
	Nodes []string `json:"nodes,omitempty"`
}

// Control is a scheduler → actor request. Reserve carries the Assignment
// (GPU) or CPU and Memory (node); TTLMillis bounds an uncommitted
// reservation in wall time. Preempt and Release name the jobs to stop.
type Control struct {
	Op        string      `json:"op"`
	JobID     string      `json:"job_id,omitempty"`
	Job       *Assignment `json:"job,omitempty"`
	CPU       float64     `json:"cpu,omitempty"`
	Memory    int64       `json:"memory,omitempty"`
	TTLMillis int64       `json:"ttl_ms,omitempty"`
	Jobs      []string    `json:"jobs,omitempty"`
	// Reason says why (kill).
	Reason string `json:"reason,omitempty"`
	// Chaos is the fault to apply (op chaos).
	Chaos *ChaosControl `json:"chaos,omitempty"`
	// WithSpecs asks a describe for each job's full spec and the jobs
	// that ended recently (a restarted scheduler re-learning what runs).
	WithSpecs bool `json:"with_specs,omitempty"`
	// Call names the request among the sender's calls; the answer
	// carries it back (ControlReply.Call). Batched controls share one
	// reply subject, and the call is how their answers are told apart.
	Call string `json:"call,omitempty"`
}

// MaxBatchItems bounds the controls of one ControlBatch, and so the
// answers a node may send to one batch's reply subject (its credentials'
// allow_responses).
const MaxBatchItems = 256

// ControlBatch is the body of a node's batch subject (Subjects.NodeBatch):
// controls for the node actor (GPU empty) and its GPU actors, handed to
// each in order as if each had come on its own control subject, with the
// batch's reply subject. Each answer goes to that subject on its own,
// naming its control's Call.
type ControlBatch struct {
	Items []BatchItem `json:"items"`
}

// BatchItem is one control of a ControlBatch: for the GPU it names, or
// for the node actor when GPU is empty.
type BatchItem struct {
	GPU string `json:"gpu,omitempty"`
	// Call is the control's Call: a control without one is not answered.
	Call    string          `json:"call,omitempty"`
	Control json.RawMessage `json:"control"`
}

// Stopped reports a job a GPU actor stopped, with the work it had done.
type Stopped struct {
	JobID     string  `json:"job_id"`
	ProgressS float64 `json:"progress_s"`
	// Training is a training job's state when it stopped.
	Training *model.TrainingState `json:"training,omitempty"`
}

// LastEnded is the latest end of job id among ended (a GPU's memory of
// ended jobs, oldest first).
func LastEnded(ended []EndedJob, id string) (EndedJob, bool) {
	for i := len(ended) - 1; i >= 0; i-- {
		if ended[i].JobID == id {
			return ended[i], true
		}
	}
	return EndedJob{}, false
}

// ControlReply answers a Control. OK false with Reason is a refusal
// ("insufficient VRAM", "fragmented VRAM", "insufficient CPU"...); Error
// is a malformed request.
type ControlReply struct {
	OK      bool      `json:"ok"`
	Reason  string    `json:"reason,omitempty"`
	Offset  int64     `json:"offset,omitempty"`
	Version uint64    `json:"version,omitempty"`
	Stopped []Stopped `json:"stopped,omitempty"`
	// Ended are the jobs a preempt or release named that the GPU no longer
	// ran, as far as they had got when they ended there (its memory of
	// ended jobs, GPUStatus.Ended): a gang's share fenced while no
	// scheduler watched bounds the whole gang's progress.
	Ended  []Stopped         `json:"ended,omitempty"`
	Status *GPUStatus        `json:"status,omitempty"`
	Error  *model.FieldError `json:"error,omitempty"`
	// Incarnation is the answering GPU actor's incarnation (reserve): the
	// scheduler records which incarnation a placement runs on, so that a
	// late gpu.down of an older one does not take it.
	Incarnation int `json:"incarnation,omitempty"`
	// Call is the answered control's Call.
	Call string `json:"call,omitempty"`
	// Down says the GPU actor is down (between a crash and its restart):
	// its supervisor refused for it. The scheduler places nothing more
	// there until the GPU speaks again (its gpu.up).
	Down bool `json:"down,omitempty"`
	// Holds are what a node actor that refused a reservation for want of
	// CPU or memory holds, job by job: the scheduler frees there the holds
	// of jobs it does not run on that node (a job no scheduler knows any
	// more held them for good, and the node refused, again and again,
	// what the scheduler's view saw room for).
	Holds []NodeHold `json:"holds,omitempty"`
}

// NodeHold is one job's hold on a node actor's CPU and memory; Committed
// says the job was committed there (an uncommitted one expires by itself).
type NodeHold struct {
	JobID     string  `json:"job_id"`
	CPU       float64 `json:"cpu"`
	Memory    int64   `json:"memory"`
	Committed bool    `json:"committed,omitempty"`
}
