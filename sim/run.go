package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/jobgen"
	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/chaos"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/simclock"
)

// Epoch is where every simulation's virtual clock starts, so that two runs
// of the same seed carry the same times.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Config describes one simulated run.
type Config struct {
	Shape  model.Shape
	Policy string
	// Queue is the scheduler's queue order (policy.DefaultQueue when empty).
	Queue string
	// Preempt is the scheduler's preemption rule and Filters its filters
	// (cluster.Config).
	Preempt string
	Filters string
	// Oversubscribe is the scheduler's oversubscription ratio
	// (cluster.Config; 1 when zero).
	Oversubscribe float64
	// Round and RoundEvery: the scheduler's round (cluster.Config).
	Round      string
	RoundEvery time.Duration
	// Training runs distributed training jobs (cluster.Config); its
	// Origin is the run's Epoch.
	Training *core.TrainingConfig
	// Throughputs runs typed jobs at the table's rates (cluster.Config).
	Throughputs *model.ThroughputTable
	// LocalityPenalty is cluster.Config.LocalityPenalty.
	LocalityPenalty float64
	Seed            uint64
	// Rate is generated jobs per simulated hour (the generated mix), used
	// when Arrivals is nil.
	Rate float64
	// Arrivals replaces the generated mix (a trace); they are copied.
	Arrivals []jobgen.Arrival
	// Source, when set, replaces both: arrivals drawn as they come (it may
	// never end; Hours bounds the run then, and StopWhen may end it).
	Source jobgen.Source
	// StopWhen, when set, also ends the run: asked at each settled instant.
	StopWhen func() bool
	// Replay runs a reproduced simulator's rounds over the typed jobs (cluster.Config).
	Replay *core.ReplayConfig
	// Hours ends arrivals after this much simulated time (0 with Arrivals:
	// all of them).
	Hours float64
	// Drain bounds the simulated time after the last arrival for the jobs
	// still queued or running to end (DefaultDrain when zero).
	Drain time.Duration
	// Sample is the simulated period of the metrics time series
	// (DefaultSample(horizon) when zero).
	Sample time.Duration
	// Interference is the GPUs' noisy-neighbour coefficient.
	Interference float64
	// StarvationAge as in scheduler.Config (zero: the default).
	StarvationAge time.Duration
	// Workload fixes the class distribution fragmentation is measured
	// against (a trace's, known in advance as in the FGD paper); nil: the
	// classes of the jobs submitted so far.
	Workload *policy.Workload
	Logger   *zap.Logger
	// Attach, when set, is called with the cluster's NATS URL once it is up
	// and before the workload starts: an observer can connect there. It
	// only watches, so it cannot change the run's outcome.
	Attach func(url string)
	// Progress, when set, is called now and then with the simulated time
	// reached (from another goroutine).
	Progress func(simulated time.Duration)
	// Chaos, when set, draws faults from Seed in simulated time, the same
	// in every run of the seed: every kind replays exactly (durations,
	// delays and reservation expiry are simulated time too). There are no
	// leases on a virtual clock: a hung or cut-off GPU is not declared
	// dead; its jobs pause (hang) or run on unheard (partition) and it is
	// trusted again when it says it is back (docs/CHAOS.md).
	Chaos *chaos.MonkeySpec
	// Events, when set, hears every event of the run (its subject and
	// body) before the clock moves on: an in-process checker (simtest).
	// It is called from one goroutine, in arrival order.
	Events func(subject string, data []byte)
}

// DefaultDrain lets the jobs left at the end of arrivals run to their end
// for up to 30 simulated days; a job still unfinished then is reported as such.
const DefaultDrain = 30 * 24 * time.Hour

// DefaultSample spreads about 2,000 samples over horizon, at least one a
// simulated minute apart: enough resolution for the plots, few enough that
// measuring fragmentation on a 6,000-GPU cluster stays cheap.
func DefaultSample(horizon time.Duration) time.Duration {
	return max(time.Minute, (horizon / 2000).Round(time.Minute))
}

// Result is one run's outcome.
type Result struct {
	Policy string
	Seed   uint64
	Jobs   []JobResult
	Series []Sample
	// Final is the cluster's metrics when the run ended.
	Final events.Metrics
	// Submitted counts the jobs submitted; Length is the simulated time
	// the run lasted (arrivals and drain); Sample the series' period.
	Submitted int
	Length    time.Duration
	Sample    time.Duration
	// Wall is the wall time the run took, start-up excluded; Instants the
	// virtual clock's timer firings.
	Wall     time.Duration
	StartUp  time.Duration
	Instants uint64
	// Faults are what each fault cost (chaos; none without).
	Faults []FaultCost
	// LooseArms counts timers armed while nothing held the clock
	// (simclock.Virtual.LooseArms): each one a place where the run may
	// depend on goroutine timing. Zero in a deterministic run.
	LooseArms uint64
	// FlushErrors counts the watched connections' flushes that failed
	// while the clock settled an instant (simclock.Virtual.FlushErrors):
	// each kept the clock at its instant until a flush succeeded, so the
	// run's outcome does not depend on them, only its wall time.
	FlushErrors uint64
}

// Run starts a cluster of cfg.Shape on a virtual clock, drives the
// workload through it over NATS and returns the results once every job has
// ended (or the drain limit has passed).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if len(cfg.Shape.Nodes) == 0 {
		return nil, fmt.Errorf("sim: the cluster has no nodes")
	}
	horizon := time.Duration(cfg.Hours * float64(time.Hour))
	var source jobgen.Source
	if cfg.Source != nil {
		source = cfg.Source
		if horizon <= 0 {
			return nil, fmt.Errorf("sim: a source of arrivals needs hours to bound the run")
		}
	} else if cfg.Arrivals != nil {
		source = jobgen.NewListSource(cfg.Arrivals)
		if horizon == 0 && len(cfg.Arrivals) > 0 {
			horizon = cfg.Arrivals[len(cfg.Arrivals)-1].At
		}
	} else if cfg.Rate <= 0 || horizon <= 0 {
		return nil, fmt.Errorf("sim: a generated workload needs a positive rate and hours")
	}
	if cfg.Drain <= 0 {
		cfg.Drain = DefaultDrain
	}
	if cfg.Sample <= 0 {
		cfg.Sample = DefaultSample(horizon)
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	clock := simclock.NewVirtual(Epoch)
	col := newCollector(Epoch)
	var submitted atomic.Int64
	submitted.Store(-1) // arrivals not over yet
	clock.StopAt(Epoch.Add(horizon + cfg.Drain))
	clock.StopWhen(func() bool {
		if cfg.StopWhen != nil && cfg.StopWhen() {
			return true
		}
		n := submitted.Load()
		return n >= 0 && col.done(int(n))
	})
	wallStart := time.Now()
	c, err := cluster.Start(ctx, cluster.Config{
		Seed:   cfg.Seed,
		Logger: log,
		Chaos:  cfg.Chaos,
		Access: cluster.Access{Listen: "127.0.0.1:0"},
		Hardware: cluster.Hardware{
			Shape:           cfg.Shape,
			Throughputs:     cfg.Throughputs,
			LocalityPenalty: cfg.LocalityPenalty,
			Interference:    cfg.Interference,
		},
		Scheduling: cluster.Scheduling{
			Policy:        cfg.Policy,
			Queue:         cfg.Queue,
			Preempt:       cfg.Preempt,
			Filters:       cfg.Filters,
			Oversubscribe: cfg.Oversubscribe,
			Round:         cfg.Round,
			RoundEvery:    cfg.RoundEvery,
			Training:      cfg.Training,
			Replay:        cfg.Replay,
			StarvationAge: cfg.StarvationAge,
			Workload:      cfg.Workload,
		},
		Arrivals: cluster.Arrivals{
			Rate:          cfg.Rate,
			Demo:          cfg.Arrivals == nil && cfg.Source == nil,
			Source:        source,
			Until:         horizon,
			HoldGenerator: true,
			Finished:      func(n int) { submitted.Store(int64(n)) },
		},
		Timing: cluster.Timing{
			Clock:         clock,
			Epoch:         Epoch,
			MetricsPeriod: cfg.Sample,
		},
	})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	nc, err := c.Client("collector")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	subjects := events.NewSubjects(events.DefaultPrefix)
	if err := col.subscribe(nc, subjects); err != nil {
		return nil, err
	}
	if cfg.Events != nil {
		sub, err := nc.Subscribe(subjects.AllEvents(), func(m *nats.Msg) { cfg.Events(m.Subject, m.Data) })
		if err != nil {
			return nil, err
		}
		sub.SetPendingLimits(-1, -1) // a checker must not miss an event
		col.subs = append(col.subs, sub)
	}
	// The server must hold the subscriptions before the generator starts:
	// a SUB still on its way missed the first jobs' events (seen: 49 of
	// 54 submitted events heard by the Events hook, in one run of two).
	if err := nc.Flush(); err != nil {
		return nil, err
	}
	c.Watch(nc, col.subs...)
	if cfg.Attach != nil {
		cfg.Attach(c.URL())
	}
	res := &Result{Policy: cfg.Policy, Seed: cfg.Seed, Sample: cfg.Sample, StartUp: time.Since(wallStart)}
	wallStart = time.Now()
	c.StartGenerator()

	progress := time.NewTicker(200 * time.Millisecond)
	defer progress.Stop()
wait:
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-clock.Done():
			break wait
		case <-progress.C:
			if cfg.Progress != nil {
				cfg.Progress(clock.Now().Sub(Epoch))
			}
		}
	}
	res.Wall = time.Since(wallStart)
	res.Length = clock.Now().Sub(Epoch)
	res.Instants = clock.Fired()
	res.LooseArms = clock.LooseArms()
	res.FlushErrors = clock.FlushErrors()
	if cfg.Progress != nil {
		cfg.Progress(res.Length)
	}
	// The clock has stopped, so the scheduler answers at the run's last instant.
	msg, err := nc.Request(subjects.ClusterSnapshot(), []byte(`{"page":0}`), 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("final snapshot: %w", err)
	}
	var snap events.Snapshot
	if err := json.Unmarshal(msg.Data, &snap); err != nil {
		return nil, fmt.Errorf("final snapshot: %w", err)
	}
	res.Final = snap.Summary
	res.Jobs, res.Series = col.results()
	res.Faults = col.faultCosts()
	// The series ends with the run's last instant, so that it accounts for
	// the whole run (its energy is the run's).
	if n := len(res.Series); n == 0 || res.Series[n-1].T < res.Length.Seconds() {
		res.Series = append(res.Series, Sample{T: res.Length.Seconds(), Metrics: res.Final})
	}
	res.Submitted = int(max(0, submitted.Load()))
	if n := submitted.Load(); n >= 0 && len(res.Jobs) != int(n) {
		return res, fmt.Errorf("%d jobs submitted, %d seen by the observer: events were lost", n, len(res.Jobs))
	}
	return res, nil
}
