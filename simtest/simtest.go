package simtest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpusched/gpusched/actors/jobgen"
	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/chaos"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/observer"
	"github.com/gpusched/gpusched/sim"
)

// Case is what one seed draws: everything a run needs, printed so that a
// person can read what failed.
type Case struct {
	Seed   uint64
	Hours  float64
	GPUs   string // the shape, as --gpus takes it
	Shape  model.Shape
	Policy string
	Queue  string
	Rate   float64
	// Kills is the rate of GPU kills per simulated hour (0: none).
	Kills float64
	// Hangs, Partitions, Delays and Drops are the other faults' rates per
	// simulated hour (0: none), each fault lasting FaultFor (a delay adds
	// 500 ms to the GPU's messages, a drop loses a fifth of them).
	Hangs, Partitions, Delays, Drops float64
	FaultFor                         time.Duration
	// SchedulerKills is the rate of scheduler kills per simulated hour
	// (0: none): the run keeps a memory journal, so none may lose a job.
	SchedulerKills float64
	// SchedulerHangs and SchedulerPartitions are the rates of scheduler
	// hangs and partitions per simulated hour (0: none), each FaultFor.
	SchedulerHangs, SchedulerPartitions float64
	// SchedulerFailovers is the rate of failovers per simulated hour (0:
	// none): the scheduler is cut off for good and a standby takes the
	// control plane over from the memory journal (failover-scheduler).
	SchedulerFailovers float64
	Arrivals           []jobgen.Arrival
	// Sample is the period of the metrics samples whose totals must never
	// go back (DefaultSample when zero). Not drawn: a setting of the run.
	Sample time.Duration
	// Training runs distributed training jobs (arrivals with "training").
	// Not drawn (it needs a Pollux data folder): set by a test.
	Training *core.TrainingConfig
}

// DefaultSample is how often a run samples its totals: every 10 simulated
// minutes. A sample is an instant of its own on the virtual clock, and at
// one a minute (compare's default for a day) the samples are a large share
// of a run's settles and wall time. A total that went back stays back until a sample sees
// it; one that went back and forward again between two samples is missed
// at any period.
const DefaultSample = 10 * time.Minute

// String is the case in one line.
func (c Case) String() string {
	s := fmt.Sprintf("seed %d: %s, %s/%s, %d jobs at %.1f/h over %gh, kill=%.1f/h", c.Seed, c.GPUs, c.Policy, c.Queue,
		len(c.Arrivals), c.Rate, c.Hours, c.Kills)
	if c.Hangs+c.Partitions+c.Delays+c.Drops > 0 {
		s += fmt.Sprintf(" hang=%g/h partition=%g/h delay=%g/h drop=%g/h for=%s", c.Hangs, c.Partitions, c.Delays, c.Drops, c.FaultFor)
	}
	if c.SchedulerKills > 0 {
		s += fmt.Sprintf(" kill-scheduler=%g/h", c.SchedulerKills)
	}
	if c.SchedulerHangs+c.SchedulerPartitions > 0 {
		s += fmt.Sprintf(" hang-scheduler=%g/h partition-scheduler=%g/h for=%s", c.SchedulerHangs, c.SchedulerPartitions, c.FaultFor)
	}
	if c.SchedulerFailovers > 0 {
		s += fmt.Sprintf(" failover-scheduler=%g/h", c.SchedulerFailovers)
	}
	if c.Kills+c.Hangs+c.Partitions+c.Delays+c.Drops+c.SchedulerKills+c.SchedulerHangs+c.SchedulerPartitions+c.SchedulerFailovers > 0 {
		s += fmt.Sprintf(" until=%gh", c.Hours)
	}
	return s
}

// simModels are the GPU models a drawn cluster mixes.
var simModels = []string{"A100-40GB", "A100-80GB", "V100-16GB", "V100-32GB", "T4-16GB", "H100-80GB"}

// MaxGPUs bounds a drawn cluster.
const MaxGPUs = 64

// maxKillsPerGPUHour bounds a drawn case's kill rate by its size (Draw).
const maxKillsPerGPUHour = 0.5

// Draw is the case of seed for hours of arrivals. Pure: the same seed and
// hours give the same case.
func Draw(seed uint64, hours float64) Case {
	rng := rand.New(rand.NewPCG(seed, 0x5eed5eed))
	c := Case{Seed: seed, Hours: hours}
	// The shape: one to three terms of one model each, 1–64 GPUs in all.
	total := 1 + rng.IntN(MaxGPUs)
	var terms []string
	for left, n := total, 1+rng.IntN(3); left > 0 && n > 0; n-- {
		count := left
		if n > 1 {
			count = 1 + rng.IntN(left)
		}
		terms = append(terms, strconv.Itoa(count)+"x"+simModels[rng.IntN(len(simModels))])
		left -= count
	}
	c.GPUs = strings.Join(terms, ",")
	c.Shape, _ = model.ParseGPUs(c.GPUs) // drawn from the catalog: valid
	c.Policy = Placements[rng.IntN(len(Placements))]
	c.Queue = Queues[rng.IntN(len(Queues))]
	// Load in proportion to the cluster (the reference's 6 an hour on 8
	// GPUs is busy), from light to overloaded.
	c.Rate = float64(total) * (0.25 + rng.Float64())
	if rng.IntN(4) > 0 {
		c.Kills = float64(rng.IntN(5)) // per simulated hour, across the cluster
		// At most one kill per GPU every two hours: the mix's jobs
		// checkpoint every 30 minutes, and a GPU killed more often than
		// that never finishes a long job — a livelock of the case, not of
		// the scheduler. The draw is unchanged; only small clusters' rates
		// are capped.
		c.Kills = min(c.Kills, maxKillsPerGPUHour*float64(total))
	}
	c.Arrivals = feasible(arrivals(rng, seed, c.Rate, time.Duration(hours*float64(time.Hour))), c.Shape, hours)
	// Drawn last, so that the cases drawn before they were (shape,
	// policies, load, kills, arrivals) stay what they were.
	if rng.IntN(2) == 0 {
		c.Hangs, c.Partitions = float64(rng.IntN(3)), float64(rng.IntN(3))
		c.Delays, c.Drops = float64(rng.IntN(2)), float64(rng.IntN(2))
		c.FaultFor = time.Duration(1+rng.IntN(30)) * time.Minute
	}
	// Drawn after everything else, for the same reason: a quarter of the
	// seeds kill their scheduler once or twice an hour.
	if rng.IntN(4) == 0 {
		c.SchedulerKills = float64(1 + rng.IntN(2))
	}
	// Drawn after those, for the same reason: a quarter of the seeds hang
	// or cut off their scheduler up to twice an hour each.
	if rng.IntN(4) == 0 {
		c.SchedulerHangs, c.SchedulerPartitions = float64(rng.IntN(3)), float64(rng.IntN(3))
		if c.FaultFor == 0 {
			c.FaultFor = time.Duration(1+rng.IntN(30)) * time.Minute
		}
	}
	// Drawn after those, for the same reason: a quarter of the seeds fail
	// their control plane over to a standby once or twice an hour.
	if rng.IntN(4) == 0 {
		c.SchedulerFailovers = float64(1 + rng.IntN(2))
	}
	return c
}

// Placements and Queues are the placement policies and queue orders a
// case is dealt from, in the order the draw indexes them. They are this
// package's own lists, not the registry's: a policy registered later
// changes no seed's case (a seed is a case for good, and the docs and
// notes name cases by seed). A newcomer runs under `cluster simtest
// --policy NAME` (or --queue); appending it here deals it into every seed
// drawn after, and re-deals the others, so it is a change of its own.
var (
	Placements = []string{"best-fit", "binpack", "dotprod", "fgd", "first-fit", "gpu-clustering", "gpu-packing", "random", "smallest-fit", "spread"}
	Queues     = []string{"priority", "fifo", "las", "sjf", "srtf"}
)

// feasibleBudget is how many hours of work each GPU may be given by the
// jobs that fit only on GPUs as large as it or larger, beyond the hours of
// arrivals: half the 30-day drain, since such jobs share their GPUs with
// others and slow down beside them.
const feasibleBudget = 15 * 24

// feasible drops the arrivals a drawn cluster could not finish within the
// drain: the generated mix does not know the cluster, and a job that fits
// only the few largest GPUs waits for them in line (one A100 80GB beside
// smaller GPUs can be given a month of 34–38 GB jobs: a livelock of the
// case, not of the scheduler). For each GPU size, the
// work of the jobs that need at least that size may not exceed the GPUs
// of that size or larger times the hours plus feasibleBudget; an arrival
// that would is dropped. Pure, and cases within bounds keep every arrival.
func feasible(arrivals []jobgen.Arrival, shape model.Shape, hours float64) []jobgen.Arrival {
	var sizes []int64 // every GPU's VRAM
	for _, n := range shape.Nodes {
		for _, g := range n.GPUs {
			sizes = append(sizes, int64(g.Model.VRAM))
		}
	}
	slices.Sort(sizes)
	budget := hours + feasibleBudget
	demand := map[int64]float64{} // GPU-hours asked of the GPUs of at least a size
	out := arrivals[:0:0]
	for _, a := range arrivals {
		var req events.SubmitRequest
		if err := json.Unmarshal(a.Body, &req); err != nil {
			out = append(out, a) // not the mix's: the scheduler judges it
			continue
		}
		spec, fe := req.Job()
		if fe != nil || spec.GPUs == 0 || spec.VRAM == 0 {
			out = append(out, a) // CPU-only and shares fit anywhere
			continue
		}
		// The smallest size it fits on: it runs on that size or larger,
		// and so loads every size up to that one.
		i, _ := slices.BinarySearch(sizes, int64(spec.VRAM))
		if i == len(sizes) {
			out = append(out, a) // fits nowhere: the scheduler rejects it
			continue
		}
		work := spec.Duration.Hours() * float64(spec.GPUs)
		ok := true
		for k := 0; k <= i && ok; k++ {
			if k == 0 || sizes[k] != sizes[k-1] {
				// sizes[k:] are the GPUs of at least sizes[k].
				ok = demand[sizes[k]]+work <= float64(len(sizes)-k)*budget
			}
		}
		if !ok {
			continue
		}
		for k := 0; k <= i; k++ {
			if k == 0 || sizes[k] != sizes[k-1] {
				demand[sizes[k]] += work
			}
		}
		out = append(out, a)
	}
	return out
}

// arrivals are the generated mix at rate over horizon, some jobs turned
// into gangs (2–4 GPUs on one node), CPU-only jobs and GPU shares.
func arrivals(rng *rand.Rand, seed uint64, rate float64, horizon time.Duration) []jobgen.Arrival {
	mix := jobgen.NewMix(seed)
	var out []jobgen.Arrival
	at := time.Duration(0)
	for {
		at += mix.Interarrival(rate)
		if at > horizon {
			return out
		}
		spec := mix.Next()
		switch k := rng.IntN(10); {
		case k == 0:
			spec.GPUs = new(2 + rng.IntN(3))
		case k == 1:
			spec.GPUs, spec.VRAM, spec.Util = new(0), nil, nil
			spec.CPU = new(float64(1 + rng.IntN(8)))
		case k == 2:
			spec.VRAM = nil
			spec.GPUMilli = new(float64([]int{250, 500, 750}[rng.IntN(3)]))
		}
		body, _ := json.Marshal(spec)
		out = append(out, jobgen.Arrival{At: at, Name: spec.Name, Body: body})
	}
}

// Outcome is what a case's run found.
type Outcome struct {
	Case
	// Problems are the invariants broken: the checker's violations, then
	// the run's own (a job accepted and never ended, a total that went
	// back). Empty: the seed passed.
	Problems []string
	// History is the shortest event history that shows the first
	// problem naming a job or GPU: the events of what it names.
	History []string
	Summary sim.Summary
	Events  int
	// SchedulerKills counts the scheduler kills carried out.
	SchedulerKills int
	Wall           time.Duration
	Err            error
}

// historyLimit bounds the history printed for a problem.
const historyLimit = 40

// Run runs a case and checks it.
func Run(ctx context.Context, c Case) Outcome {
	out := Outcome{Case: c}
	checker := observer.NewChecker()
	var mu sync.Mutex
	var log []string // every event, briefly, for the history of a problem
	cfg := sim.Config{Shape: c.Shape, Policy: c.Policy, Queue: c.Queue, Seed: c.Seed, Arrivals: c.Arrivals, Hours: c.Hours, Training: c.Training,
		Interference: model.DefaultInterference, Drain: sim.DefaultDrain, Sample: cmp.Or(c.Sample, DefaultSample),
		Events: func(subject string, data []byte) {
			ev, fe := events.DecodeEvent(data)
			if fe != nil {
				checker.Malformed(subject, fe)
				return
			}
			checker.Feed(subject, ev)
			if strings.HasSuffix(subject, ".heartbeat") {
				// Checked (their seq), not kept for a history: every few
				// simulated minutes they name each GPU, a history of one
				// would be mostly heartbeats.
				return
			}
			mu.Lock()
			log = append(log, ev.SimTime.Format("Jan 2 15:04:05.000")+" "+strings.TrimPrefix(subject, events.DefaultPrefix+".evt.")+" "+string(ev.Data))
			mu.Unlock()
		}}
	rates := map[string]float64{events.ChaosKillAction: c.Kills, events.ChaosHang: c.Hangs, events.ChaosPartition: c.Partitions,
		events.ChaosDelay: c.Delays, events.ChaosDrop: c.Drops, events.ChaosKillScheduler: c.SchedulerKills,
		events.ChaosHangScheduler: c.SchedulerHangs, events.ChaosPartitionScheduler: c.SchedulerPartitions,
		events.ChaosFailoverScheduler: c.SchedulerFailovers}
	for kind, r := range rates {
		if r <= 0 {
			delete(rates, kind)
		}
	}
	if len(rates) > 0 {
		// A delay of 500 ms and a drop of a fifth of the messages: the
		// monkey's defaults on the command line.
		// Faults while jobs arrive, none in the drain: with leases, a
		// GPU faulted most of the time loses every job longer than its
		// gaps between faults, for ever — a case that cannot finish, not
		// a broken invariant. The drain still recovers from the last faults.
		cfg.Chaos = &chaos.MonkeySpec{Rates: rates, For: c.FaultFor, Delay: 500 * time.Millisecond, Drop: 0.2,
			Until: time.Duration(c.Hours * float64(time.Hour))}
	}
	start := time.Now()
	res, err := sim.Run(ctx, cfg)
	out.Wall = time.Since(start)
	if err != nil {
		out.Err = err
		return out
	}
	out.Summary = sim.Summarize(res)
	cs := checker.Summary()
	out.Events, out.SchedulerKills = cs.Events, cs.SchedulerKills
	for _, v := range cs.Violations {
		out.Problems = append(out.Problems, v.String())
	}
	if out.Summary.Unended > 0 {
		out.Problems = append(out.Problems, fmt.Sprintf("%d accepted jobs never ended (30 days of drain): %s", out.Summary.Unended, unended(res.Jobs)))
	}
	if len(cs.Stuck) > 0 {
		out.Problems = append(out.Problems, "jobs not ended at the end: "+strings.Join(cs.Stuck, ", "))
	}
	out.Problems = append(out.Problems, backwards(res.Series)...)
	if res.LooseArms > 0 {
		// Not an invariant of the cluster but of the simulation: such a
		// timer may start from a later instant in one run than another.
		out.Problems = append(out.Problems, fmt.Sprintf("%d timers armed after the work that armed them let the clock go: this seed may not replay", res.LooseArms))
	}
	if len(out.Problems) > 0 {
		mu.Lock()
		// The first problem that names a job or a GPU.
		for _, p := range out.Problems {
			if out.History = history(log, p); len(out.History) > 0 {
				break
			}
		}
		mu.Unlock()
	}
	return out
}

// Options are how RunSeeds runs its seeds: Hours of arrivals each,
// sampled every Sample (zero: DefaultSample), Workers at once; Policy and
// Queue, when set, replace the placement policy and queue order each case
// was dealt (everything else drawn stays), so that a policy not in
// Placements or Queues runs over the same cases.
type Options struct {
	Hours         float64
	Sample        time.Duration
	Workers       int
	Policy, Queue string
	// Worker, when set and Workers is above 1, starts each worker as a
	// Worker of its own (for `cluster simtest`, a process) instead of a
	// goroutine of this process: RunSeeds runs the seeds apart
	// (runApart).
	Worker func(context.Context, Options) (*Worker, error)
}

// caseOf is the case seed is dealt under o.
func (o Options) caseOf(seed uint64) Case {
	c := Draw(seed, o.Hours)
	c.Sample = o.Sample
	c.Policy, c.Queue = cmp.Or(o.Policy, c.Policy), cmp.Or(o.Queue, c.Queue)
	return c
}

// RunSeeds runs the cases of seeds under o and returns their outcomes in
// the seeds' order; done, when set, is called with each outcome as it
// comes (one call at a time). Seeds not started when ctx ends have a zero
// outcome.
func RunSeeds(ctx context.Context, seeds []uint64, o Options, done func(Outcome)) []Outcome {
	if o.Worker != nil && o.Workers > 1 {
		return runApart(ctx, seeds, o, done)
	}
	outcomes := make([]Outcome, len(seeds))
	sem := make(chan struct{}, max(o.Workers, 1))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, seed := range seeds {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				return
			}
			outcomes[i] = Run(ctx, o.caseOf(seed))
			if done != nil {
				mu.Lock()
				defer mu.Unlock()
				done(outcomes[i])
			}
		})
	}
	wg.Wait()
	return outcomes
}

// backwards reports the totals of a run's series that ever decreased.
func backwards(series []sim.Sample) []string {
	var out []string
	for i := 1; i < len(series); i++ {
		a, b := series[i-1], series[i]
		for _, t := range []struct {
			name     string
			was, now float64
		}{{"jobs_completed", float64(a.JobsCompleted), float64(b.JobsCompleted)}, {"preemptions", float64(a.Preemptions), float64(b.Preemptions)},
			{"energy_kwh", a.EnergyKWh, b.EnergyKWh}} {
			if t.now < t.was {
				out = append(out, fmt.Sprintf("%s went back from %g to %g at %.0f s", t.name, t.was, t.now, b.T))
			}
		}
	}
	return out
}

// unended names (up to 20) the jobs of a run that neither completed nor
// were rejected, with the state the collector last had for each, so that
// the problem's history shows their events.
func unended(jobs []sim.JobResult) string {
	var names []string
	for i := range jobs {
		if j := &jobs[i]; j.Unended() {
			if len(names) == 20 {
				names = append(names, "…")
				break
			}
			names = append(names, j.Job+" ("+j.State+")")
		}
	}
	return strings.Join(names, ", ")
}

// history picks the events that mention what problem names (a job id or
// a GPU), the last historyLimit of them: the shortest history that shows it.
func history(log []string, problem string) []string {
	var keys []string
	for _, w := range strings.FieldsFunc(problem, func(r rune) bool { return r == ' ' || r == ',' || r == ':' || r == '(' || r == ')' }) {
		if len(w) >= 36 || strings.Contains(w, "gpu-") { // a job id (UUID) or a GPU
			keys = append(keys, strings.TrimSuffix(w, "."))
		}
	}
	var out []string
	for _, l := range log {
		if slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(l, k) }) {
			out = append(out, l)
		}
	}
	if len(out) > historyLimit {
		out = out[len(out)-historyLimit:]
	}
	return out
}

// ReplayCommand is the one command that replays a seed run under o.
func ReplayCommand(seed uint64, o Options) string {
	cmd := fmt.Sprintf("go run ./cmd/cluster simtest --seeds %d --hours %g --verbose", seed, o.Hours)
	if o.Sample != 0 && o.Sample != DefaultSample {
		cmd += " --sample " + o.Sample.String()
	}
	if o.Policy != "" {
		cmd += " --policy " + o.Policy
	}
	if o.Queue != "" {
		cmd += " --queue " + o.Queue
	}
	return cmd
}
