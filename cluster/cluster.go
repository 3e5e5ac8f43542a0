package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/uuid"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/jobgen"
	"github.com/gpusched/gpusched/actors/node"
	"github.com/gpusched/gpusched/actors/scheduler"
	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/bus"
	"github.com/gpusched/gpusched/chaos"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/pollux"
	"github.com/gpusched/gpusched/simclock"
	"github.com/gpusched/gpusched/vram"
)

// DefaultListen is where the embedded NATS server listens.
const DefaultListen = "127.0.0.1:4222"

// Config describes a cluster to start, in sections: how clients reach it
// (Access), its GPUs and their liveness (Hardware), how it schedules
// (Scheduling, Admission), the jobs it generates (Arrivals), its clock
// (Timing) and what it keeps (Durability). Each section is embedded, so a
// field is read as cfg.Policy whatever its section.
type Config struct {
	Access
	Hardware
	Scheduling
	Admission
	Arrivals
	Timing
	Durability
	// Seed seeds the generator, the policies' draws and ranks, and the
	// chaos monkey.
	Seed   uint64
	Logger *zap.Logger
	// SchedulerTrace goes to every incarnation of the scheduler
	// (scheduler.Config.Trace): for benchmarks.
	SchedulerTrace func(scheduler.Stage)
	// Chaos, when set, runs a seeded chaos monkey (seeded by Seed) from
	// the start: `cluster --chaos`.
	Chaos *chaos.MonkeySpec
}

// Access is how clients reach the cluster's bus, and who may.
type Access struct {
	// Listen is host:port for the embedded NATS server; port 0 or -1 picks a free one.
	Listen string
	// Prefix starts every subject of the cluster (events.NewSubjects).
	Prefix string
	// Bus, when its URLs are set, is an external NATS server or cluster
	// to use instead of the embedded server (Listen is then unused).
	Bus bus.Options
	// Auth, when set, is the roles file: the embedded server then
	// authenticates every client (this process's actors with a key of
	// their own, made at each start) and gives each the permissions of its
	// role; tenants are accounts of their own. With Bus, the scheduler
	// takes the tenants from it (the external server enforces it: see
	// auth.ServerConfig).
	Auth *auth.File
	// TLS, when set, secures the embedded server's client port; with a CA,
	// clients must show a certificate it signed.
	TLS *auth.TLSFiles
	// NodeEventBudget bounds the events each node of Auth may publish
	// (the zero value: auth.DefaultEventBudget; Off: none). It is kept by
	// the embedded server's process only.
	NodeEventBudget auth.EventBudget
	// Insecure lets the embedded server listen beyond loopback without
	// Auth (anyone who reaches the port may then do anything), or with
	// Auth but without TLS (credentials and messages in clear).
	Insecure bool
	// ReadersPerAccount bounds the consumers of the event stream each
	// account reading it through an import (an observer's, an admin's)
	// may hold, on an authenticated cluster with a store
	// (auth.DefaultReadersPerAccount when zero; negative: no warden).
	ReadersPerAccount int
}

// Hardware is the cluster's GPUs and nodes: what they are, how fast they
// run each job, and how their liveness is kept.
type Hardware struct {
	// Shape is the cluster; DefaultShape() when it has no nodes.
	Shape model.Shape
	// NoGPUs runs the control plane only: the scheduler, chaos responder
	// and generator, with GPU nodes joining from `cluster node` processes.
	NoGPUs bool
	// VRAMModel selects how the GPUs allocate their VRAM (vram.Model).
	VRAMModel vram.Model
	// Throughputs is the cluster's throughput table: the GPUs run typed
	// jobs at its rates and the scheduler places them as its pairs allow
	// (core.Config.Throughputs). Nil: typed jobs are refused.
	Throughputs *model.ThroughputTable
	// LocalityPenalty is the multiplier on the iteration time of a job
	// with a perf_class whose GPUs span nodes (core.Config.LocalityPenalty;
	// the GPUs' own paces are in Shape: model.GPUSpec.Variability).
	LocalityPenalty float64
	// Interference is the GPUs' noisy-neighbour coefficient (0: none; the
	// commands default to model.DefaultInterference).
	Interference float64
	// Heartbeat is the nodes' heartbeat period (when zero: a third of
	// the lease, at most node.DefaultHeartbeat, or on a virtual clock
	// node.DefaultVirtualHeartbeat).
	Heartbeat time.Duration
	// Lease is how long a GPU may go unrenewed before the scheduler
	// declares it dead (wall time, scheduler.DefaultLease when zero; on a
	// virtual clock simulated time, core.DefaultVirtualLease when zero,
	// and only with Chaos: without, a virtual run has no leases).
	// The node heartbeat must be well inside it: a third by default.
	Lease time.Duration
	// RestartBackoff is the first wait before a crashed actor (GPU or
	// scheduler) restarts; it doubles with each crash soon after the last.
	RestartBackoff time.Duration
}

// Scheduling is the scheduler's policies: placement, queue order,
// preemption, filters, rounds, and the reproduced simulators' runs.
type Scheduling struct {
	// Policy names the placement policy (policy.Policy).
	Policy string
	// Queue is the scheduler's queue order (policy.QueueSort).
	Queue string
	// Preempt names the scheduler's preemption rule (policy.Preempt).
	Preempt string
	// Filters names the scheduler's filters (policy.Filter),
	// comma-separated; empty: none.
	Filters string
	// Round names the scheduler's round (policy.Round) and RoundEvery its
	// period of simulated time; no round when RoundEvery is zero.
	Round      string
	RoundEvery time.Duration
	// Oversubscribe is how far past 100 % of its compute the scheduler's
	// capacity-bound policies may fill a GPU (core.Config; 1 when zero).
	Oversubscribe float64
	// StarvationAge is the simulated wait after which a head-of-line job
	// holds GPUs (core.Config.StarvationAge).
	StarvationAge time.Duration
	// NodeRank, Workload and DropUnschedulable go to the scheduler (see
	// scheduler.Config); Config.Seed also seeds the policies' draws and
	// ranks.
	NodeRank          map[string]int
	Workload          *policy.Workload
	DropUnschedulable bool
	// Training runs distributed training jobs (core.TrainingConfig); its
	// Model is the GPUs' too. nil: none.
	Training *core.TrainingConfig
	// Replay runs a reproduced simulator's rounds over the typed jobs (core.ReplayConfig;
	// virtual clock only); its Origin is the clock's start when zero.
	Replay *core.ReplayConfig
}

// Admission bounds what each tenant, and each node joining from
// elsewhere, may bring.
type Admission struct {
	// TenantLimits bound each tenant (policy.Admit); empty: none.
	TenantLimits policy.TenantLimits
	// TenantRate and TenantBurst bound each tenant's submissions a second
	// on an authenticated bus (core.Config; 0: no bound).
	TenantRate  float64
	TenantBurst int
	// TenantQueue bounds each tenant's queued jobs (core.Config; 0: none).
	TenantQueue int
	// NodeMaxGPUs bounds the GPUs a node joining from elsewhere may have,
	// unless the roles file gives its node user gpus (core.Config; 0:
	// none). The nodes this process runs may have what their shape gives.
	NodeMaxGPUs int
}

// Arrivals is the job generator's: the generated mix (seeded by
// Config.Seed) or a trace's jobs.
type Arrivals struct {
	// Rate is generated jobs per simulated hour (0: no generator).
	Rate float64
	// Demo submits the demo's five jobs when the generator starts;
	// PinDemo starts them on the GPUs the demo shows them on, where the
	// shape has those GPUs and they fit (a live run's first screen is then
	// the demo's; a comparison leaves them to each policy).
	Demo, PinDemo bool
	// JobLimit stops the generator after this many jobs (0: no limit).
	JobLimit int
	// HoldGenerator leaves the generator to StartGenerator, so that a
	// client can subscribe before the first job arrives.
	HoldGenerator bool
	// Source replaces the generated mix with these arrivals (a trace);
	// Until ends arrivals after this much simulated time; Finished is told
	// how many jobs were submitted once arrivals end (see jobgen.Config).
	Source   jobgen.Source
	Until    time.Duration
	Finished func(submitted int)
}

// Timing is the cluster's clock.
type Timing struct {
	// Speed is simulated seconds per wall second.
	Speed float64
	// Epoch is the simulated time at start (the wall clock's now when zero).
	Epoch time.Time
	// Clock, when set, is the cluster's clock; a *simclock.Virtual makes
	// it run as fast as the machine allows (it starts moving once the
	// cluster is ready and the generator started). Nil: a scaled clock at
	// Epoch and Speed.
	Clock simclock.Clock
	// MetricsPeriod is the period of metrics events: wall time on the
	// scaled clock (1s when zero), simulated time on a virtual one (1m).
	MetricsPeriod time.Duration
}

// Durability is what the cluster keeps, where, and whether it leads.
type Durability struct {
	// Store is where JetStream keeps the job journal and the event stream
	// (durable.None: no JetStream; the scheduler's queue dies with it).
	// DataDir is the embedded server's store directory (required for
	// durable.File; a temporary one for durable.Memory).
	Store   durable.Storage
	DataDir string
	// Durable bounds the event stream and sets the replicas on a NATS
	// cluster (its Storage is Store).
	Durable durable.Options
	// Fresh deletes what the store holds of a previous run (the job
	// journal and the event stream) before starting. A run that stopped
	// cleanly (Stop) is not resumed either, unless Resume: only a crashed
	// run is taken up again by default.
	Fresh, Resume bool
	// Standby starts a control plane that schedules nothing until the one
	// that leads the store (on the external bus Bus) renews nothing for a
	// lease; it then takes the store over and schedules from its journal
	// (leader.go). It runs no GPUs, no job generator and no chaos
	// responder of its own.
	Standby bool
}

// Cluster is a running cluster.
type Cluster struct {
	cfg    Config
	server *server.Server
	conns  []*nats.Conn
	closed []chan struct{}
	cancel context.CancelFunc
	runCtx context.Context
	// genConn is the generator's connection; genStarted is touched only by
	// the goroutine that starts the cluster.
	genConn    *nats.Conn
	genStarted bool
	wg         sync.WaitGroup
	hosts      []*node.Host
	// Clock is the cluster's clock (scaled or virtual).
	Clock simclock.Clock
	// virtual is Clock when it is virtual.
	virtual *simclock.Virtual
	// url is the bus's URL; tmpDir a store directory removed at Stop.
	url    string
	tmpDir string
	// dial connects to the bus as this process does.
	dial func(name string, extra ...nats.Option) (*nats.Conn, error)
	// control is this process's own key on an authenticated embedded
	// server (the control role).
	control nkeys.KeyPair
	lock    *flock.Flock
	journal *durable.Journal
	// leader says whether this process leads the control plane now
	// (leader.go; only on an external bus with a journal).
	leader leading
	// supervisorOnce makes supervisor, the one emitter of this process's
	// sched.up and sched.down (one source, one seq, across restarts and
	// leadership terms).
	supervisorOnce sync.Once
	supervisor     *events.Emitter
	// memoryJournal is a virtual run's job journal when its chaos kills
	// the scheduler (nil otherwise).
	memoryJournal *durable.MemoryJournal
	// serverOpts and authSettings are the embedded server's configuration,
	// kept to reload it without a node that passed its event budget.
	serverOpts   *server.Options
	authSettings auth.ServerSettings
}

// Start starts the server and every actor, and returns once the scheduler
// has heard from every GPU and node.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if len(cfg.Shape.Nodes) == 0 {
		shape, err := model.ParseGPUs(model.DefaultGPUs)
		if err != nil {
			return nil, err
		}
		cfg.Shape = shape
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	epochGiven := !cfg.Epoch.IsZero()
	if !epochGiven {
		cfg.Epoch = time.Now().UTC().Truncate(time.Second)
	}
	if cfg.Standby {
		switch {
		case cfg.Bus.URLs == "":
			return nil, errors.New("a standby control plane needs the bus (--nats URL) its active one runs on: an embedded server dies with the process it is in")
		case cfg.Store == durable.None:
			return nil, errors.New("a standby control plane takes over from the job journal: it needs a store (not --store none)")
		case cfg.Fresh:
			return nil, errors.New("a standby control plane takes the store over as it is: --fresh would delete the active one's jobs")
		case cfg.Rate > 0 || cfg.Source != nil:
			return nil, errors.New("a standby control plane generates no jobs: leave --rate out (it is 0 on a standby)")
		case cfg.Chaos != nil:
			return nil, errors.New("a standby control plane runs no chaos monkey")
		}
		cfg.NoGPUs = true
	}
	if cfg.NoGPUs {
		cfg.Shape = model.Shape{}
	}
	if cfg.Store != durable.None && (cfg.Clock != nil && simclock.IsVirtual(cfg.Clock)) {
		cfg.Store = durable.None // a virtual run is a computation, not a service: nothing to resume
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c := &Cluster{cfg: cfg, cancel: cancel}
	c.leader.id = uuid.NewString()[:8]
	fail := func(err error) (*Cluster, error) {
		c.Stop()
		return nil, err
	}
	var dial func(name string, extra ...nats.Option) (*nats.Conn, error)
	if cfg.Bus.URLs != "" {
		c.url = cfg.Bus.URLs
		dial = func(name string, extra ...nats.Option) (*nats.Conn, error) {
			return cfg.Bus.Connect("gpusched-"+name, 30*time.Second, extra...)
		}
	} else {
		ns, err := c.embedded(cfg)
		if err != nil {
			cancel()
			return nil, err
		}
		c.server, c.url = ns, ns.ClientURL()
		dial = func(name string, extra ...nats.Option) (*nats.Conn, error) {
			opts := append(c.InProcessOptions(), nats.Name("gpusched-"+name))
			return nats.Connect("", append(opts, extra...)...)
		}
	}
	c.dial = dial
	connect := func(name string) (*nats.Conn, error) {
		done := make(chan struct{})
		opts := []nats.Option{nats.ClosedHandler(func(*nats.Conn) { close(done) })}
		if cfg.Bus.URLs != "" && cfg.Store != durable.None {
			// Under a leadership (leader.go) nothing is kept to send after a
			// reconnect: a control plane cut off may have been replaced
			// meanwhile, and what it said while away (a record, an event,
			// an answer) would land after its successor's.
			opts = append(opts, nats.ReconnectBufSize(-1))
		}
		nc, err := dial(name, opts...)
		if err != nil {
			return nil, err
		}
		c.conns = append(c.conns, nc)
		c.closed = append(c.closed, done)
		c.watch(nc)
		return nc, nil
	}
	var restored *durable.State
	// firstIncarnation numbers the actors of this start (1, or after the
	// incarnations of the store's earlier starts).
	firstIncarnation := 1
	if cfg.Store != durable.None {
		jc, err := connect("journal")
		if err != nil {
			return fail(err)
		}
		opt := cfg.Durable
		opt.Storage = cfg.Store
		setupCtx, done := context.WithTimeout(ctx, 30*time.Second)
		defer done()
		if cfg.Standby {
			// A standby reads the journal when it takes the store over, not
			// before: until then it is the active one's.
			if c.journal, err = durable.Setup(setupCtx, jc, cfg.Prefix, opt); err != nil {
				return fail(err)
			}
		} else {
			if cfg.Fresh {
				// Said: what the previous run left is gone for good.
				if old, err := durable.Setup(setupCtx, jc, cfg.Prefix, opt); err == nil {
					if st, err := old.Load(setupCtx); err == nil && len(st.Jobs) > 0 {
						unfinished := 0
						for _, r := range st.Jobs {
							switch r.State {
							case events.JobCompleted, events.JobCancelled, events.JobRejected:
							default:
								unfinished++
							}
						}
						cfg.Logger.Info("--fresh: discarding the previous run's jobs and event history",
							zap.Int("jobs", len(st.Jobs)), zap.Int("unfinished", unfinished), zap.String("store", storeName(cfg)))
					}
				}
				if err := durable.Reset(setupCtx, jc, cfg.Prefix); err != nil {
					return fail(err)
				}
			}
			if c.journal, err = durable.Setup(setupCtx, jc, cfg.Prefix, opt); err != nil {
				return fail(err)
			}
			st, err := c.journal.Load(setupCtx)
			if err != nil {
				return fail(err)
			}
			if st.Stopped && !cfg.Resume && len(st.Jobs) > 0 {
				// The last run was stopped on purpose: a new run, as a user
				// starting the demo again expects.
				cfg.Logger.Info("the last run on this store stopped cleanly: starting a new one (--resume takes it up instead)",
					zap.Int("jobs_it_had", len(st.Jobs)), zap.String("store", storeName(cfg)))
				if err := durable.Reset(setupCtx, jc, cfg.Prefix); err != nil {
					return fail(err)
				}
				if c.journal, err = durable.Setup(setupCtx, jc, cfg.Prefix, opt); err != nil {
					return fail(err)
				}
				if st, err = c.journal.Load(setupCtx); err != nil {
					return fail(err)
				}
			}
			if err := c.journal.MarkRunning(setupCtx); err != nil {
				return fail(fmt.Errorf("job journal: %w", err))
			}
			restored = &st
			boot, err := c.journal.NextBoot(setupCtx)
			if err != nil {
				return fail(fmt.Errorf("job journal: counting this start: %w", err))
			}
			firstIncarnation = durable.IncarnationBase(boot) + 1
			if len(st.Jobs) > 0 {
				// The demo's jobs were submitted when this store's run began.
				c.cfg.Demo, cfg.Demo = false, false
				queued, running := 0, 0
				for _, r := range st.Jobs {
					switch r.State {
					case events.JobQueued:
						queued++
					case events.JobPlaced, events.JobRunning:
						running++
					}
				}
				how := "resuming after a crash"
				if st.Stopped {
					how = "resuming the stopped run (--resume)"
				}
				cfg.Logger.Info(how+" (--fresh starts empty)", zap.Int("queued", queued), zap.Int("running", running),
					zap.Int("jobs", len(st.Jobs)), zap.Time("from_simtime", st.SimTime), zap.String("store", storeName(cfg)))
			}
			if cfg.Clock == nil && !st.SimTime.IsZero() && !epochGiven {
				// Simulated time resumes where the journal left it, so queued
				// jobs keep their waits and order.
				cfg.Epoch = st.SimTime
			}
		}
	}
	c.Clock = cfg.Clock
	if c.Clock == nil {
		c.Clock = simclock.NewScaled(cfg.Epoch, cfg.Speed)
	}
	c.virtual, _ = c.Clock.(*simclock.Virtual)
	if cfg.Training != nil && cfg.Training.Origin.IsZero() {
		// Rounds fall on whole intervals from the run's start.
		t := *cfg.Training
		t.Origin = c.Clock.Now()
		cfg.Training = &t
	}
	if cfg.Replay != nil && cfg.Replay.Origin.IsZero() {
		g := *cfg.Replay
		g.Origin = c.Clock.Now()
		cfg.Replay = &g
	}
	if err := c.keepBudgets(runCtx, cfg); err != nil {
		return fail(fmt.Errorf("node event budgets: %w", err))
	}
	if err := c.keepReaders(runCtx, cfg); err != nil {
		return fail(fmt.Errorf("reader warden: %w", err))
	}
	if err := c.watchStore(runCtx, cfg); err != nil {
		return fail(fmt.Errorf("store watch: %w", err))
	}
	subjects := events.NewSubjects(cfg.Prefix)
	log := cfg.Logger

	schedConn, err := connect("scheduler")
	if err != nil {
		return fail(err)
	}
	lease := cfg.Lease
	if lease <= 0 {
		lease = scheduler.DefaultLease
		if c.virtual != nil {
			lease = core.DefaultVirtualLease
		}
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = min(node.DefaultHeartbeat, lease/3)
		if c.virtual != nil {
			cfg.Heartbeat = min(node.DefaultVirtualHeartbeat, lease/3)
		}
	}
	if cfg.Heartbeat >= lease {
		return fail(fmt.Errorf("the heartbeat (%s) must be shorter than the lease (%s): a third of it or less", cfg.Heartbeat, lease))
	}
	gpuLease := lease
	if c.virtual != nil && cfg.Chaos == nil {
		// A virtual run without a chaos monkey has no leases: nothing in
		// it can silence a GPU (a kill is told by gpu.down), so a lease
		// could never run out, and the heartbeats renewing them every few
		// simulated minutes would cost a long trace millions of messages.
		// Its decisions are then those of a run before leases existed.
		gpuLease, lease = 0, -1
	}
	schedCfg := scheduler.Config{Conn: schedConn, Clock: c.Clock, Journal: c.journal, Config: core.Config{
		Subjects: subjects,
		Logger:   log,
		Policies: core.Policies{
			Policy:            cfg.Policy,
			Queue:             cfg.Queue,
			Admit:             admitOf(cfg.TenantLimits),
			Preempt:           cfg.Preempt,
			Filters:           cfg.Filters,
			Oversubscribe:     cfg.Oversubscribe,
			Round:             cfg.Round,
			RoundEvery:        cfg.RoundEvery,
			StarvationAge:     cfg.StarvationAge,
			Seed:              int64(cfg.Seed),
			NodeRank:          cfg.NodeRank,
			DropUnschedulable: cfg.DropUnschedulable,
		},
		Workloads: core.Workloads{
			Training:        cfg.Training,
			Replay:          cfg.Replay,
			Throughputs:     cfg.Throughputs,
			LocalityPenalty: cfg.LocalityPenalty,
			VRAMModel:       cfg.VRAMModel,
			Workload:        cfg.Workload,
		},
		Bounds: core.Bounds{
			TenantRate:  cfg.TenantRate,
			TenantBurst: cfg.TenantBurst,
			TenantQueue: cfg.TenantQueue,
		},
		Clocks:     core.Clocks{MetricsPeriod: cfg.MetricsPeriod, Lease: lease},
		Succession: core.Succession{Restored: restored},
	}, Trace: cfg.SchedulerTrace}
	if c.virtual != nil && c.journal == nil && cfg.Chaos != nil && cfg.Chaos.Rates[events.ChaosKillScheduler]+cfg.Chaos.Rates[events.ChaosFailoverScheduler] > 0 {
		// A virtual run keeps no durable journal (nothing of it outlives
		// the process); one that kills its scheduler (or fails it over to
		// a standby) keeps the records in
		// memory instead, so that the restarted scheduler takes the queue
		// back as a live cluster on a durable journal would: without, every
		// kill would lose the queue.
		c.memoryJournal = durable.NewMemoryJournal()
		schedCfg.MemoryJournal = c.memoryJournal
	}
	schedCfg.NodeGPUs, schedCfg.NodeMaxGPUs = map[string]int{}, cfg.NodeMaxGPUs
	if cfg.Auth != nil {
		schedCfg.Tenants = cfg.Auth.Tenants()
		maps.Copy(schedCfg.NodeGPUs, cfg.Auth.NodeGPUs())
	}
	for _, n := range cfg.Shape.Nodes {
		schedCfg.NodeGPUs[n.ID] = len(n.GPUs)
	}
	if cfg.NoGPUs {
		// GPU nodes join from elsewhere: for one lease, a job that fits no
		// GPU known yet waits instead of being rejected.
		schedCfg.Since = time.Now()
	}
	if c.leads() {
		schedCfg.Fenced = c.leader.fenced
	}
	if cfg.Standby {
		c.wg.Go(func() {
			leadLog := log.With(zap.String("actor", "leadership"))
			if next, s, ok := c.standBy(runCtx, schedCfg, lease, leadLog); ok {
				c.lead(runCtx, next, s, lease)
			}
		})
	} else {
		if c.leads() {
			lctx, done := context.WithTimeout(ctx, 30*time.Second)
			term, err := c.journal.Lead(lctx, c.holder())
			done()
			if err != nil {
				return fail(fmt.Errorf("job journal: taking its leadership: %w", err))
			}
			c.leader.hold(time.Now(), lease)
			log.Info("leading the control plane", zap.Uint64("term", term))
		}
		sched, err := scheduler.New(schedCfg)
		if err != nil {
			return fail(err)
		}
		c.watchSubs(sched.Subscriptions())
		if c.leads() {
			c.wg.Go(func() { c.lead(runCtx, schedCfg, sched, lease) })
		} else {
			c.wg.Go(func() { c.superviseScheduler(runCtx, schedCfg, sched) })
		}
	}

	nodeConn, err := connect("nodes")
	if err != nil {
		return fail(err)
	}
	// GPUs join in waves of joinWave: each GPU's lease starts when it
	// does, and a scheduler that had 100,000 gpu.up events in its mailbox
	// at once would answer the heartbeats behind them later than the
	// lease, so the GPUs would fence and join again, and again.
	gpus, nodes := 0, 0
	var router *node.Router
	if len(cfg.Shape.Nodes) > 0 {
		// One pair of subscriptions for every node of this process.
		if router, err = node.NewRouter(nodeConn, subjects); err != nil {
			return fail(err)
		}
		c.watchSubs(router.Subscriptions())
	}
	for i, spec := range cfg.Shape.Nodes {
		h, err := node.Start(runCtx, node.HostConfig{Spec: spec, VRAMModel: cfg.VRAMModel, Clock: c.Clock,
			Subjects: subjects, Conn: nodeConn, Logger: log, Heartbeat: cfg.Heartbeat, Interference: cfg.Interference, Training: trainingModel(cfg.Training), Throughputs: cfg.Throughputs,
			Lease: gpuLease, RestartBackoff: cfg.RestartBackoff, Router: router, FirstIncarnation: firstIncarnation})
		if err != nil {
			return fail(err)
		}
		c.watchSubs(h.Subscriptions())
		c.hosts = append(c.hosts, h)
		gpus += len(spec.GPUs)
		nodes++
		if gpus%joinWave < len(spec.GPUs) && gpus >= joinWave && i < len(cfg.Shape.Nodes)-1 {
			if err := c.waitReady(ctx, schedConn, subjects, gpus, nodes); err != nil {
				return fail(err)
			}
		}
	}
	if cfg.Standby {
		log.Info("standby control plane ready", zap.String("nats", c.URL()), zap.String("prefix", subjects.Prefix), zap.String("store", storeName(cfg)))
		c.runCtx = runCtx
		return c, nil
	}
	chaosConn, err := connect("chaos")
	if err != nil {
		return fail(err)
	}
	responder, err := chaos.Serve(chaosConn, subjects, cfg.Shape, c.Clock, log)
	if err != nil {
		return fail(err)
	}
	c.watchSubs(responder.Subscriptions())
	if err := c.waitReady(ctx, schedConn, subjects, cfg.Shape.GPUCount(), len(cfg.Shape.Nodes)); err != nil {
		return fail(err)
	}
	log.Info("cluster ready", zap.String("nats", c.URL()), zap.Int("nodes", len(cfg.Shape.Nodes)),
		zap.Int("gpus", cfg.Shape.GPUCount()), zap.String("prefix", subjects.Prefix), zap.String("store", storeName(cfg)))

	c.runCtx = runCtx
	if c.virtual != nil {
		c.wg.Go(func() { c.virtual.Run(runCtx) })
	}
	if cfg.Chaos != nil {
		var targets []chaos.Target
		for _, n := range cfg.Shape.Nodes {
			for _, g := range n.GPUs {
				targets = append(targets, chaos.Target{GPU: g.ID, Node: n.ID})
			}
		}
		spec := *cfg.Chaos
		// Held until the monkey has armed its first fault: on a virtual
		// clock time must not move before.
		c.Clock.Hold()
		start := c.Clock.Now()
		c.wg.Go(func() {
			chaos.RunMonkey(runCtx, chaosConn, subjects, c.Clock, spec, cfg.Seed, targets, log, start, true)
		})
	}
	if cfg.Rate > 0 || cfg.Source != nil {
		if c.genConn, err = connect("jobgen"); err != nil {
			return fail(err)
		}
		if !cfg.HoldGenerator {
			c.StartGenerator()
		}
	} else if c.virtual != nil {
		c.virtual.Start()
	}
	return c, nil
}

// supervisorEmitter is the emitter of sched.up and sched.down for this
// process: "/supervisor/scheduler", or under a leadership
// "/supervisor/scheduler/<process>" (two control planes each number
// their own).
func (c *Cluster) supervisorEmitter(nc *nats.Conn) *events.Emitter {
	c.supervisorOnce.Do(func() {
		source := "/supervisor/scheduler"
		if c.leads() {
			source += "/" + c.leader.id
		}
		c.supervisor = events.NewEmitter(nc, source)
	})
	return c.supervisor
}

// watch makes a virtual clock flush nc before it decides the simulation
// has settled. A flush that fails keeps the clock at its instant (it
// flushes again), except on a closed connection (a dead scheduler's):
// what it held is lost, not late, and nothing more will come from it.
func (c *Cluster) watch(nc *nats.Conn) {
	if c.virtual != nil {
		c.virtual.WatchSent(func() error {
			if err := nc.FlushTimeout(10 * time.Second); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
				return err
			}
			return nil
		}, func() uint64 { return nc.Stats().OutMsgs })
	}
}

// watchSubs makes a virtual clock count the messages waiting in subs.
func (c *Cluster) watchSubs(subs []*nats.Subscription) {
	if c.virtual == nil {
		return
	}
	for _, sub := range subs {
		c.virtual.Watch(nil, func() int {
			if sub == nil {
				return 0
			}
			n, _, err := sub.Pending()
			if err != nil {
				// Unsubscribed (a dead scheduler's): it holds nothing, and
				// its -1 would keep the clock from ever settling. Forgotten
				// from then on: a subscription keeps its handler, and the
				// handler its scheduler — every job it restored — so each
				// restart would keep its predecessor alive for the run.
				// (Only the clock's settling goroutine calls this.)
				sub = nil
				return 0
			}
			return n
		})
	}
}

// Watch makes a virtual clock wait for a client's connection and
// subscriptions too (an in-process observer that must see every event
// before time moves on); it does nothing on a scaled clock.
func (c *Cluster) Watch(nc *nats.Conn, subs ...*nats.Subscription) {
	c.watch(nc)
	c.watchSubs(subs)
}

// StartGenerator starts the job generator (once; Start does it unless
// the config holds it back), and a virtual clock with it.
func (c *Cluster) StartGenerator() {
	if c.genConn == nil || c.genStarted {
		return
	}
	c.genStarted = true
	cfg := c.cfg
	// The generator's first submissions happen before the clock may move.
	c.Clock.Hold()
	c.wg.Go(func() {
		jobgen.Run(c.runCtx, jobgen.Config{Subjects: events.NewSubjects(cfg.Prefix), Conn: c.genConn, Clock: c.Clock,
			Logger: cfg.Logger, Seed: cfg.Seed, Rate: cfg.Rate, Demo: cfg.Demo, PinDemo: cfg.PinDemo && jobgen.DemoFits(vramByGPU(cfg.Shape)), Limit: cfg.JobLimit,
			Source: cfg.Source, Until: cfg.Until, Finished: cfg.Finished, Holding: true})
	})
	if c.virtual != nil {
		c.virtual.Start()
	}
}

// vramByGPU is the VRAM of each GPU of shape, by id.
func vramByGPU(shape model.Shape) map[string]model.Bytes {
	out := map[string]model.Bytes{}
	for _, n := range shape.Nodes {
		for _, g := range n.GPUs {
			out[g.ID] = g.Model.VRAM
		}
	}
	return out
}

// joinWave is how many GPUs start before the cluster waits for the
// scheduler to have heard them all.
const joinWave = 4096

// waitReady polls the snapshot until the scheduler has heard from want
// GPUs and wantNodes nodes.
func (c *Cluster) waitReady(ctx context.Context, nc *nats.Conn, subjects events.Subjects, want, wantNodes int) error {
	// 30 s, and a second more per 2,000 GPUs: a big cluster joins for a while.
	limit := 30*time.Second + time.Duration(want/2000)*time.Second
	deadline := time.Now().Add(limit)
	// A snapshot's summary reads every GPU: asked less often of a big cluster.
	poll := 10*time.Millisecond + time.Duration(want/5000)*time.Millisecond
	for {
		msg, err := nc.Request(subjects.ClusterSnapshot(), []byte(`{"summary_only":true}`), 2*time.Second)
		if err == nil {
			var snap events.Snapshot
			// At least its own: GPU nodes of other processes may be there too.
			if json.Unmarshal(msg.Data, &snap) == nil && snap.Summary.GPUs >= want && snap.Summary.GPUsAlive >= want &&
				snap.Summary.NodesAlive >= wantNodes {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the scheduler did not hear from every GPU and node within %s", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// URL is the NATS URL clients connect to.
func (c *Cluster) URL() string { return c.url }

// Stop stops every actor, drains the connections and shuts the server down.
func (c *Cluster) Stop() {
	c.cancel()
	c.wg.Wait()
	for _, h := range c.hosts {
		h.Wait()
	}
	if c.journal != nil && (!c.leads() || c.leader.on.Load()) {
		// A clean stop: the next start begins a new run unless it resumes.
		// (Not a standby's, nor a deposed one's: the store is another's.)
		ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.journal.MarkStopped(ctx); err != nil {
			c.cfg.Logger.Warn("job journal: the clean stop is not recorded (the next start will resume)", zap.Error(err))
		}
		done()
	}
	// Every connection drains at once, then each is waited for: a drain
	// takes at least 10 ms however little it holds (nats.go polls every
	// 10 ms for its subscriptions to end), which one after another was
	// most of a short simulated run's stop.
	for _, nc := range c.conns {
		if err := nc.Drain(); err != nil {
			nc.Close()
		}
	}
	drained, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	for i, nc := range c.conns {
		select {
		case <-c.closed[i]:
		case <-drained.Done(): // past the deadline: closed without waiting
			nc.Close()
		}
	}
	if c.server != nil {
		c.server.Shutdown()
		c.server.WaitForShutdown()
	}
	c.release()
}

// Client opens a connection to the cluster's bus as its own actors do
// (in-process to the embedded server, with this process's credentials when
// the bus authenticates; closed by the caller), for tools such as replay
// or `cluster --observe` that drive or watch the cluster they started.
func (c *Cluster) Client(name string, extra ...nats.Option) (*nats.Conn, error) {
	return c.dial(name, extra...)
}

// embedded starts the embedded NATS server, with JetStream when the
// cluster keeps state.
func (c *Cluster) embedded(cfg Config) (*server.Server, error) {
	host, portStr, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: want HOST:PORT (for example 127.0.0.1:4222)", cfg.Listen)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < -1 || port > 65535 {
		return nil, fmt.Errorf("--listen %q: port must be a number from 0 to 65535", cfg.Listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	if err := checkExposure(host, cfg); err != nil {
		return nil, err
	}
	opts := &server.Options{Host: host, Port: port, NoSigs: true, NoLog: true, MaxPayload: 8 << 20}
	if cfg.Auth != nil || cfg.TLS != nil {
		settings := auth.ServerSettings{Prefix: events.NewSubjects(cfg.Prefix).Prefix, TLS: cfg.TLS}
		settings.EventStream = durable.EventStream(settings.Prefix)
		if cfg.Auth != nil {
			kp, err := nkeys.CreateUser()
			if err != nil {
				return nil, err
			}
			pub, _ := kp.PublicKey()
			c.control, settings.ControlKeys = kp, []string{pub}
		}
		if err := auth.Configure(opts, cfg.Auth, settings); err != nil {
			return nil, err
		}
		opts.Host, opts.Port, opts.NoSigs, opts.NoLog = host, port, true, true
		c.authSettings = settings
	}
	switch cfg.Store {
	case durable.File:
		if cfg.DataDir == "" {
			return nil, errors.New("--data-dir: a durable cluster needs a store directory (or --memory for a throwaway run)")
		}
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("--data-dir %s: %v", cfg.DataDir, err)
		}
		// One cluster per store: two servers writing the same files would
		// corrupt them (nats-server does not guard against it).
		lock := flock.New(filepath.Join(cfg.DataDir, "gpusched.lock"))
		locked, err := lock.TryLock()
		if err != nil {
			return nil, fmt.Errorf("--data-dir %s: %v", cfg.DataDir, err)
		}
		if !locked {
			return nil, fmt.Errorf("--data-dir %s is in use by another cluster: stop it, or give this one another --data-dir (or --memory)", cfg.DataDir)
		}
		c.lock = lock
		opts.JetStream, opts.StoreDir = true, cfg.DataDir
	case durable.Memory:
		dir, err := os.MkdirTemp("", "gpusched-memory-")
		if err != nil {
			return nil, err
		}
		c.tmpDir = dir
		opts.JetStream, opts.StoreDir = true, dir
	}
	c.serverOpts = opts
	ns, err := server.NewServer(opts)
	if err != nil {
		c.release()
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		c.release()
		return nil, fmt.Errorf("embedded NATS server did not start on %s (is the port in use? try --listen 127.0.0.1:4223)", cfg.Listen)
	}
	return ns, nil
}

// checkExposure refuses an open bus beyond loopback: anyone who reaches
// such a port could submit, cancel, switch the policy and kill GPUs.
func checkExposure(host string, cfg Config) error {
	if cfg.Insecure || IsLoopback(host) {
		return nil
	}
	if cfg.Auth != nil && cfg.TLS == nil {
		// Credentials in clear text: whoever sees the traffic has them.
		return fmt.Errorf("--listen %s reaches beyond this machine with --auth but without TLS: the keys' signatures and every "+
			"message would cross the network in clear; give --tlscert and --tlskey (`cluster auth init` writes a set: "+
			"--tlscert gpusched-auth/tls/server-cert.pem --tlskey gpusched-auth/tls/server-key.pem), or listen on 127.0.0.1, "+
			"or accept it with --insecure", cfg.Listen)
	}
	if cfg.Auth != nil {
		return nil
	}
	return fmt.Errorf("--listen %s reaches beyond this machine, and without credentials anyone who reaches it could submit, "+
		"cancel, switch the policy and kill GPUs: create them with `cluster auth init` and start with --auth gpusched-auth "+
		"(docs/SECURITY.md), or listen on 127.0.0.1, or accept an open bus with --insecure", cfg.Listen)
}

// IsLoopback says whether a server listening on host is reachable from
// this machine only ("localhost", 127.0.0.0/8, ::1; "" and 0.0.0.0 are
// every interface).
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// InProcessOptions are the options of an in-process connection to the
// embedded server, with this process's credentials when the bus
// authenticates (the control role).
func (c *Cluster) InProcessOptions() []nats.Option {
	opts := []nats.Option{nats.InProcessServer(c.server), nats.MaxReconnects(-1)}
	if c.virtual != nil {
		// No write deadline in process on a virtual clock: nats.go sets
		// one on the pipe before every write it flushes (a timer reset
		// each time, 4.6 % of a simtest profile's CPU), and there is no
		// network here to time out — a closed server closes the pipe.
		opts = append(opts, nats.FlusherTimeout(0))
	}
	if c.control != nil {
		pub, _ := c.control.PublicKey()
		opts = append(opts, nats.Nkey(pub, c.control.Sign))
	}
	return opts
}

// release gives back the store of a cluster that did not start.
func (c *Cluster) release() {
	if c.tmpDir != "" {
		os.RemoveAll(c.tmpDir)
	}
	if c.lock != nil {
		c.lock.Unlock()
	}
}

// storeName says where the cluster keeps its state, for the log.
func storeName(cfg Config) string {
	switch cfg.Store {
	case durable.File:
		if cfg.Bus.URLs != "" {
			return "file (on the NATS servers)"
		}
		return "file: " + cfg.DataDir
	case durable.Memory:
		return "memory"
	}
	return "none"
}

// admitOf is the scheduler's admission for limits: none when there are none.
func admitOf(limits policy.TenantLimits) policy.Admit {
	if len(limits) == 0 {
		return nil
	}
	return limits
}

// trainingModel is the model GPUs run training jobs on (nil: none).
func trainingModel(t *core.TrainingConfig) *pollux.Model {
	if t == nil {
		return nil
	}
	return t.Model
}
