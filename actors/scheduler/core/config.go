package core

import (
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/vram"
)

// Config configures the core (and, embedded in scheduler.Config, the
// scheduler actor), in sections: its policies (Policies), the jobs' model
// (Workloads), the bounds on what tenants and nodes bring (Bounds), its
// clock and periods (Clocks), and what it takes over from a predecessor
// (Succession). Each section is embedded, so a field is read as
// cfg.Policy whatever its section. The shell sets Virtual, Speed, Now,
// Wall, Inbox, IDSeed, Journaled and MaxPayload; a Harness sets what a
// test does not.
type Config struct {
	Policies
	Workloads
	Bounds
	Clocks
	Succession
	Subjects events.Subjects
	Logger   *zap.Logger
	// Inbox is the prefix (with its trailing dot) of the reply subjects of
	// the core's own requests: a message under it is an answer.
	Inbox string
	// IDSeed seeds the job ids on a scaled clock: the shell draws it from
	// the system's randomness, so that no two runs name a job the same.
	// A virtual run (and a zero IDSeed) seeds them from Seed and the
	// incarnation instead, so that a repeated run names its jobs the same.
	// The core draws nothing else at random.
	IDSeed [32]byte
}

// Policies are the scheduler's plug-ins by name (policy's registry) and
// the settings they run with.
type Policies struct {
	// Policy names the placement (policy.Policy; policy.DefaultPolicy
	// when empty).
	Policy string
	// Queue is the queue order (policy.QueueSort; policy.DefaultQueue when empty).
	Queue string
	// Preempt chooses victims (policy.Preempt; policy.DefaultPreempt when
	// empty).
	Preempt string
	// Filters are the filters in force (policy.Filter), comma-separated
	// ("" or "none": none).
	Filters string
	// Admit is admission (policy.Admit: per-tenant limits); nil admits
	// every job.
	Admit policy.Admit
	// Round names the round (policy.Round: time-slicing re-allocation;
	// policy.DefaultRound when empty) run every RoundEvery of simulated
	// time; no round when RoundEvery is zero.
	Round      string
	RoundEvery time.Duration
	// Oversubscribe is how far past 100 % of its compute the CapacityBound
	// policies (binpack, spread, first-fit, smallest-fit) and the capacity
	// filter may fill a GPU: 1 (the default, when zero) keeps every GPU
	// within its compute; 2 lets two full jobs share one; +Inf: no limit.
	Oversubscribe float64
	// StarvationAge is the simulated wait after which a head-of-line job
	// holds GPUs (policy.DefaultStarvationAge when zero; negative disables).
	StarvationAge time.Duration
	// DropUnschedulable rejects a job that fits nowhere at submission
	// instead of queueing it, and never preempts for it: the FGD paper's
	// replay protocol.
	DropUnschedulable bool
	// Seed seeds the draws of the policies that draw (random) and each
	// node's tie-break rank when NodeRank does not give it.
	Seed int64
	// NodeRank gives nodes their tie-break rank under the node-scoring
	// policies (lowest wins); a node it does not name gets a rank drawn
	// from Seed and its id (a replay passes the paper's permutation).
	NodeRank map[string]int
}

// Workloads is what the jobs are and how they run: the learned or fixed
// class mix, the typed jobs' throughputs, training and replayed rounds.
type Workloads struct {
	// Workload fixes the class distribution fragmentation is measured
	// against; nil means the classes of the jobs submitted so far.
	Workload *policy.Workload
	// Training runs distributed training jobs in rounds (nil: such
	// submissions are refused).
	Training *TrainingConfig
	// Replay runs a reproduced simulator's rounds over the typed jobs
	// (ReplayConfig: Gavel's or PAL's; nil: typed jobs are placed like any
	// other). Virtual clock only.
	Replay *ReplayConfig
	// Throughputs is the cluster's throughput table: typed jobs (a
	// job_type and steps) run at its rates and share a GPU only as its
	// pairs say (policy.Cluster.Throughputs). Nil: typed jobs are refused.
	Throughputs *model.ThroughputTable
	// LocalityPenalty is the multiplier on the iteration time of a job
	// with a perf_class whose GPUs span nodes (model.GangSlowdown; PAL's
	// default is 1.7). 0 or 1: none.
	LocalityPenalty float64
	// VRAMModel is how the GPUs allocate VRAM (vram.Model), for the
	// view's layouts.
	VRAMModel vram.Model
}

// Bounds are what one tenant, one node or one answer may take.
type Bounds struct {
	// TenantRate bounds the submissions a second each tenant of an
	// authenticated bus may make (a burst of TenantBurst, TenantRate when
	// zero); zero: no bound. Submissions without a tenant (an open bus,
	// the control plane) are not bounded.
	TenantRate  float64
	TenantBurst int
	// TenantQueue bounds the jobs one tenant may have waiting in the
	// queue: a submission past it is refused on tenant (0: no bound).
	TenantQueue int
	// NodeGPUs bounds the GPUs each named node may have (the roles file's
	// gpus, a node's own shape); NodeMaxGPUs bounds any other node's (0:
	// no bound). A GPU id past its node's bound — in a heartbeat, a status
	// or an up event — is refused, so a node naming ever new ids cannot
	// grow the scheduler's view, and every snapshot and pass over it,
	// without end (nodebound.go).
	NodeGPUs    map[string]int
	NodeMaxGPUs int
	// MaxPayload, when positive, is the largest answer the bus carries: a
	// larger one is answered with an error saying so (TooLargeAnswer).
	MaxPayload int
}

// Clocks is the clock the core runs on, where it starts, and the periods
// it keeps.
type Clocks struct {
	// Virtual is true on a virtual clock: decisions wait for the instant
	// to settle (the shell's PhaseDecide timer), job ids are drawn from the
	// run's seed, and leases count in simulated time.
	Virtual bool
	// Speed is a scaled clock's speed, for snapshots (0 on any other clock).
	Speed float64
	// Now and Wall are the simulated and wall times the core starts at.
	Now, Wall time.Time
	// CallTimeout bounds each reserve/commit round trip (wall time).
	CallTimeout time.Duration
	// ReservationTTL is how long an uncommitted reservation lives (wall time).
	ReservationTTL time.Duration
	// MetricsPeriod is the period of metrics events: wall time on a scaled
	// clock, simulated time on a virtual one (where the events are the
	// run's time series).
	MetricsPeriod time.Duration
	// Lease is how long a GPU may go without a heartbeat renewing it
	// before the scheduler declares it dead and re-places its jobs (wall
	// time on a scaled clock, DefaultLease when zero; simulated time on a
	// virtual clock, DefaultVirtualLease when zero; negative: never).
	Lease time.Duration
}

// Succession is what this scheduler takes over from the one before it (a
// crashed incarnation's post-mortem, or the job journal).
type Succession struct {
	// Incarnation numbers this scheduler among its restarts (1 when zero):
	// it names its event source and, on a virtual clock, seeds its job ids.
	Incarnation int
	// Since, for a restarted scheduler, is when its predecessor died (wall
	// time); it starts a warm-up of one lease in which a job that fits no
	// GPU known yet is queued, not rejected: the GPUs are still reporting in.
	Since time.Time
	// Inherited are the jobs the predecessor was running when it died (its
	// supervisor's post-mortem; with a durable store, its journal). This
	// scheduler accounts for each: re-learned where a GPU still runs it,
	// completed where a GPU finished it, re-queued where a GPU lost it.
	Inherited []events.RunningJob
	// Unanswered are the submissions the predecessor took and had not
	// answered when it died (its supervisor's post-mortem, Unanswered):
	// this scheduler answers them at its first step.
	Unanswered []Unanswered
	// Journaled says a job journal keeps the jobs' records (Ready's Store
	// effects). Without it the core asks to store nothing.
	Journaled bool
	// Restored is what the journal held when this scheduler started: its
	// jobs are put back, and it takes the incarnation after the stored one.
	Restored *durable.State
	// Carried are the totals a crashed predecessor in this process had
	// reported (its post-mortem): the totals go on from them. Without it,
	// a restored journal's copy of the totals is where a restarted
	// cluster's go on (its GPUs' energy meters start again from zero).
	Carried *events.Totals
}

// Defaults for Config's zero values.
const (
	DefaultCallTimeout    = time.Second
	DefaultReservationTTL = 2 * time.Second
	DefaultMetricsPeriod  = time.Second
	// VirtualCallTimeout bounds a reserve/commit round trip on a virtual clock.
	VirtualCallTimeout = 30 * time.Second
	// DefaultVirtualMetricsPeriod samples a virtual run once a simulated minute.
	DefaultVirtualMetricsPeriod = time.Minute
)

// withDefaults is cfg with its zero values given their defaults (on a
// virtual clock, the virtual ones) and what they imply: a call timeout
// short next to the lease, an incarnation past a restored journal's.
func withDefaults(cfg Config) Config {
	virtual := cfg.Virtual
	// A virtual run waits out a machine too loaded to answer in a second
	// rather than decide differently because of it.
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
		if virtual {
			cfg.CallTimeout = VirtualCallTimeout
		}
	}
	if cfg.ReservationTTL <= 0 {
		cfg.ReservationTTL = DefaultReservationTTL
		if virtual {
			cfg.ReservationTTL = 2 * VirtualCallTimeout
		}
	}
	if cfg.MetricsPeriod <= 0 {
		cfg.MetricsPeriod = DefaultMetricsPeriod
		if virtual {
			cfg.MetricsPeriod = DefaultVirtualMetricsPeriod
		}
	}
	if cfg.StarvationAge == 0 {
		cfg.StarvationAge = policy.DefaultStarvationAge
	}
	if cfg.Policy == "" {
		cfg.Policy = policy.DefaultPolicy
	}
	if cfg.VRAMModel == "" {
		cfg.VRAMModel = vram.Contiguous
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
		if virtual {
			cfg.Lease = DefaultVirtualLease
		}
	}
	if cfg.Lease < 0 {
		cfg.Lease = 0
	}
	if cfg.Lease > 0 && cfg.CallTimeout > cfg.Lease/4 {
		// A call to a GPU that cannot answer must not hold the scheduler
		// (and its lease checks) for long next to the lease.
		cfg.CallTimeout = cfg.Lease / 4
	}
	if cfg.Incarnation < 1 {
		cfg.Incarnation = 1
	}
	if cfg.Restored != nil {
		// Incarnations never repeat on one journal: they name placements,
		// which GPU actors that outlive the scheduler still hold.
		cfg.Incarnation = max(cfg.Incarnation, cfg.Restored.Incarnation+1)
		if cfg.Since.IsZero() && len(cfg.Restored.Jobs) > 0 {
			cfg.Since = cfg.Wall
		}
	}
	if cfg.Queue == "" {
		cfg.Queue = policy.DefaultQueue
	}
	return cfg
}
