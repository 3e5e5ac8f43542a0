package pal

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched/internal/crmath"
	"github.com/gpusched/gpusched/internal/pyrand"
	"github.com/gpusched/gpusched/model"
)

// Round is the length of a scheduling round in seconds (the run
// scripts' --round-duration 360).
const Round = 360.0

// Config is one run of the artifact's simulation (one line of the
// reference runs' configs.txt).
type Config struct {
	// Placement and Queue are command-line names (Placements, Queues).
	Placement, Queue string
	// Locality is the penalty on every step of a gang that spans nodes
	// (--locality-penalty; the artifact's default is 1.7).
	Locality float64
	// ProfileSeed seeds the scheduler process's generator: the profile's
	// draws, then the Random placements (the artifact's 42).
	ProfileSeed uint64
	// WorkloadSeed seeds the simulator process's generator: the arrivals
	// of the jobs generated after the trace's (the artifact's 1).
	WorkloadSeed uint64
	// TrackStart and TrackEnd are the tracked (reported) job ids,
	// inclusive; the run ends when they have all completed.
	TrackStart, TrackEnd int
	// Machines and PerMachine are the cluster: Machines nodes of
	// PerMachine GPUs (the artifact's 16 × 4).
	Machines, PerMachine int
	// Rate is the arrival rate of the generated jobs in jobs per hour
	// (the "load" of the Sia runs: 2).
	Rate float64
	// Profile, when set, is the variability profile instead of the drawn
	// one (the generator is still seeded and drawn from, so the Random
	// placements see the same stream).
	Profile Profile
}

// Defaults are the artifact's: PM-First under FIFO, locality 1.7,
// profile seed 42, workload seed 1, 16 × 4 GPUs, 2 generated jobs per
// hour, jobs 0–159 tracked.
func Defaults() Config {
	return Config{Placement: "pal", Queue: "fifo", Locality: 1.7, ProfileSeed: 42, WorkloadSeed: 1,
		TrackStart: 0, TrackEnd: 159, Machines: 16, PerMachine: 4, Rate: 2}
}

// Validate says what is wrong with c, naming the field.
func (c Config) Validate() error {
	if _, ok := PlacementName(c.Placement); !ok {
		return unknownPlacement(c.Placement)
	}
	if _, ok := QueueName(c.Queue); !ok {
		return unknownQueue(c.Queue)
	}
	if !(c.Locality >= 1) || math.IsInf(c.Locality, 0) {
		return fmt.Errorf("locality: %v is not a penalty of at least 1 (1 is no penalty; the artifact's is 1.7)", c.Locality)
	}
	if c.Machines < 1 || c.PerMachine < 1 {
		return fmt.Errorf("cluster: %d × %d has no GPUs", c.Machines, c.PerMachine)
	}
	if c.TrackStart < 0 || c.TrackEnd < c.TrackStart {
		return fmt.Errorf("track: %d-%d tracks no job", c.TrackStart, c.TrackEnd)
	}
	if !(c.Rate > 0) || math.IsInf(c.Rate, 0) {
		return fmt.Errorf("rate: %v is not an arrival rate in jobs per hour", c.Rate)
	}
	if c.Profile != nil && len(c.Profile) != c.Machines*c.PerMachine {
		return fmt.Errorf("profile: %d GPUs for a cluster of %d", len(c.Profile), c.Machines*c.PerMachine)
	}
	return nil
}

// job is one job's state in the run.
type job struct {
	id         int
	model      string
	class      int
	gpusWanted int
	submit     float64
	iterTime   float64
	totalIters float64
	// executed is the iterations done; attained the seconds run (§3).
	executed, attained float64
	// gpus are the GPUs it holds (nil while it waits); pm and loc its
	// slowdowns from its last launch.
	gpus    []int
	pm, loc float64
	finish  float64
	done    bool
}

func (j *job) running() bool { return j.gpus != nil }

// RoundStat is one round as the artifact's cluster statistics record it
// (§6): the time, the GPUs free after the finished jobs left and before
// the placement, and, after the placement, which job holds which GPUs.
type RoundStat struct {
	T          float64
	FreeBefore int
	Alloc      map[int][]int
	PM, Loc    map[int]float64
}

// Driver is the artifact's round loop (§3), stepped one round at a time
// so that a live scheduler can drive the same decisions.
type Driver struct {
	cfg      Config
	data     *Data
	trace    []TraceJob
	top      topology
	profile  Profile
	levels   Levels
	entries  [NumClasses][]palEntry
	rng      *pyrand.Rand // the scheduler process's: profile, then Random
	arrivals *pyrand.Rand // the simulator process's: generated arrivals
	// jobs are every job arrived so far, by id; next is the next one to
	// arrive.
	jobs      []*job
	next      TraceJob
	owner     []int // job id per GPU, −1 when free
	now       float64
	rounds    []RoundStat
	finished  bool
	trackLeft int
}

// NewDriver is the run of trace under c, at time 0 before its first
// round.
func NewDriver(data *Data, trace []TraceJob, c Config) (*Driver, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.Placement, _ = PlacementName(c.Placement)
	c.Queue, _ = QueueName(c.Queue)
	gpus := c.Machines * c.PerMachine
	for _, tj := range trace {
		if tj.GPUs > gpus {
			return nil, fmt.Errorf("trace: job %d needs %d GPUs; the cluster has %d", tj.ID, tj.GPUs, gpus)
		}
	}
	d := &Driver{cfg: c, data: data, trace: trace, top: topology{c.PerMachine},
		rng: pyrand.New(c.ProfileSeed), arrivals: pyrand.New(c.WorkloadSeed),
		owner: make([]int, gpus), trackLeft: c.TrackEnd - c.TrackStart + 1}
	for g := range d.owner {
		d.owner[g] = -1
	}
	d.profile = DrawProfile(data, d.rng, gpus)
	if c.Profile != nil {
		d.profile = slices.Clone(c.Profile)
	}
	d.levels = NewLevels(d.profile)
	for cl := range NumClasses {
		d.entries[cl] = palEntries(d.levels.Factor[cl], c.Locality)
	}
	d.next = trace[0]
	return d, nil
}

// ProfileOf is the variability profile a run under c uses: c.Profile,
// or the one drawn from c.ProfileSeed.
func ProfileOf(data *Data, c Config) Profile {
	if c.Profile != nil {
		return slices.Clone(c.Profile)
	}
	return DrawProfile(data, pyrand.New(c.ProfileSeed), c.Machines*c.PerMachine)
}

// Profile is the run's variability profile.
func (d *Driver) Profile() Profile { return d.profile }

// Levels are the run's performance levels (§5.1).
func (d *Driver) Levels() Levels { return d.levels }

// Now is the time of the next round in seconds.
func (d *Driver) Now() float64 { return d.now }

// Done reports whether every tracked job has completed.
func (d *Driver) Done() bool { return d.finished }

// Rounds are the rounds run so far.
func (d *Driver) Rounds() []RoundStat { return d.rounds }

// generate is the job after id's: a trace row, or past the trace a copy
// of row id mod len arriving an exponential gap after the last (§2: the
// artifact's poisson_next_arrival_time, −ln(1−U)/rate hours, ceiled to a
// whole second).
func (d *Driver) generate(prev TraceJob) TraceJob {
	id := prev.ID + 1
	if id < len(d.trace) {
		return d.trace[id]
	}
	hours := -crmath.Log(1.0-d.arrivals.Random()) / d.cfg.Rate
	next := d.trace[id%len(d.trace)]
	next.ID = id
	next.Submit = prev.Submit + math.Ceil(hours*60*60)
	return next
}

// Step runs the round at Now (§3): the last round's progress and
// completions, the end test, the arrivals, the order, the placement; then
// the clock moves one round on.
func (d *Driver) Step() {
	if d.finished {
		return
	}
	t := d.now
	for _, j := range d.jobs {
		if !j.running() {
			continue
		}
		// The artifact's arithmetic: pm × loc × iteration time, then the
		// round's iterations added to those done.
		j.executed = Round/(j.pm*j.loc*j.iterTime) + j.executed
		j.attained += Round
		if j.executed >= j.totalIters {
			j.done, j.finish = true, t
			d.release(j)
			if d.tracked(j.id) {
				d.trackLeft--
			}
		}
	}
	stat := RoundStat{T: t, FreeBefore: d.freeCount()}
	if d.trackLeft <= 0 {
		d.rounds = append(d.rounds, stat)
		d.finished = true
		return
	}
	for d.next.Submit <= t {
		m := d.data.Models[d.next.Model]
		d.jobs = append(d.jobs, &job{id: d.next.ID, model: d.next.Model, class: m.Class, gpusWanted: d.next.GPUs,
			submit: d.next.Submit, iterTime: m.IterTime, totalIters: d.next.Duration})
		d.next = d.generate(d.next)
	}
	var active []*job
	for _, j := range d.jobs {
		if !j.done {
			active = append(active, j)
		}
	}
	d.place(order(d.cfg.Queue, active))
	stat.Alloc, stat.PM, stat.Loc = map[int][]int{}, map[int]float64{}, map[int]float64{}
	for _, j := range active {
		if j.running() {
			stat.Alloc[j.id], stat.PM[j.id], stat.Loc[j.id] = slices.Clone(j.gpus), j.pm, j.loc
		}
	}
	d.rounds = append(d.rounds, stat)
	d.now += Round
}

func (d *Driver) tracked(id int) bool { return id >= d.cfg.TrackStart && id <= d.cfg.TrackEnd }

func (d *Driver) freeCount() int {
	n := 0
	for _, o := range d.owner {
		if o < 0 {
			n++
		}
	}
	return n
}

func (d *Driver) freeList() []int {
	var out []int
	for g, o := range d.owner {
		if o < 0 {
			out = append(out, g)
		}
	}
	return out
}

func (d *Driver) release(j *job) {
	for _, g := range j.gpus {
		d.owner[g] = -1
	}
	j.gpus = nil
}

// launch gives j its GPUs and its slowdowns there (§1: recomputed at
// every launch, fixed while it keeps them).
func (d *Driver) launch(j *job, gpus []int) {
	j.gpus = slices.Clone(gpus)
	slices.Sort(j.gpus)
	mults := make([]float64, len(gpus))
	nodes := make([]int, len(gpus))
	for i, g := range gpus {
		d.owner[g] = j.id
		mults[i] = d.profile[g][j.class]
		nodes[i] = d.top.node(g)
	}
	j.pm, j.loc = model.GangSlowdown(mults, nodes, d.cfg.Locality)
}

// choose is the placement's chooser for j on the free GPUs.
func (d *Driver) choose(j *job) []int {
	free := d.freeList()
	switch d.cfg.Placement {
	case "pm-first":
		return pmFirst(d.top, d.levels.Factor[j.class], free, j.gpusWanted)
	case "pal":
		return palChoose(d.top, d.levels.Factor[j.class], d.entries[j.class], free, j.gpusWanted)
	case "packed-sticky", "packed-nonsticky":
		return packed(d.top, free, j.gpusWanted)
	default:
		return randomChoose(d.rng, free, j.gpusWanted)
	}
}

// place is the placement's frame (§5.2, §5.6, §5.7) over the order.
func (d *Driver) place(ord []*job) {
	switch d.cfg.Placement {
	case "pm-first", "pal":
		// §5.2: every job re-placed; the longest prefix of the order
		// whose demand fits the cluster regrouped by class, stably.
		for _, j := range ord {
			d.release(j)
		}
		demand, cut := 0, 0
		for cut < len(ord) && demand+ord[cut].gpusWanted <= len(d.owner) {
			demand += ord[cut].gpusWanted
			cut++
		}
		grouped := slices.Clone(ord)
		slices.SortStableFunc(grouped[:cut], func(a, b *job) int { return cmp.Compare(a.class, b.class) })
		d.placeUntilStuck(grouped)
	case "packed-nonsticky", "random-nonsticky":
		for _, j := range ord {
			d.release(j)
		}
		d.placeUntilStuck(ord)
	default:
		d.stickyWalk(ord)
	}
}

// placeUntilStuck places jobs in order and stops at the first that does
// not fit (no backfilling).
func (d *Driver) placeUntilStuck(ord []*job) {
	for _, j := range ord {
		pick := d.choose(j)
		if pick == nil {
			return
		}
		d.launch(j, pick)
	}
}

// stickyWalk is §5.7: running jobs keep their GPUs; a waiting job that
// does not fit preempts running jobs from the end of the order towards
// it, one at a time, until it fits; if it never does the walk stops (and
// the jobs preempted for it stay preempted).
func (d *Driver) stickyWalk(ord []*job) {
	for i, j := range ord {
		if j.running() {
			continue
		}
		pick := d.choose(j)
		for k := len(ord) - 1; pick == nil && k > i; k-- {
			if ord[k].running() {
				d.release(ord[k])
				pick = d.choose(j)
			}
		}
		if pick == nil {
			return
		}
		d.launch(j, pick)
	}
}

// JobResult is one tracked job of a run, in the columns of the reference
// runs' jobs CSV.
type JobResult struct {
	ID         int
	Submit     float64
	Finish     float64
	JCT        float64
	GPUs       int
	Model      string
	Class      string
	IterTime   float64
	TotalIters float64
	// PM and Loc are its slowdowns at its last launch.
	PM, Loc float64
}

// Nominal is the job's run time at nominal speed: iterations × time per
// iteration.
func (r JobResult) Nominal() float64 { return r.TotalIters * r.IterTime }

// Result is a run's outcome (§6).
type Result struct {
	Config Config
	Jobs   []JobResult
	// AvgJCT is the mean JCT of the tracked jobs; P99JCT the artifact's
	// 99th (element ⌊0.99·n⌋ of the ascending JCTs); MedianJCT the
	// median.
	AvgJCT, P99JCT, MedianJCT float64
	// Makespan is the last finish less the first submit over the tracked
	// jobs; LastFinish the last finish.
	Makespan, LastFinish float64
	// Rounds counts the rounds recorded, the last one included.
	Rounds int
	// Utilisation is the mean over the rounds of the share of GPUs held
	// by unfinished jobs before the round's placement (§6).
	Utilisation float64
}

// Result is the run's outcome so far: the tracked jobs that completed.
func (d *Driver) Result() *Result {
	r := &Result{Config: d.cfg, Rounds: len(d.rounds)}
	first := math.Inf(1)
	var jcts []float64
	for _, j := range d.jobs {
		if !d.tracked(j.id) || !j.done {
			continue
		}
		jr := JobResult{ID: j.id, Submit: j.submit, Finish: j.finish, JCT: j.finish - j.submit, GPUs: j.gpusWanted,
			Model: j.model, Class: Classes[j.class], IterTime: j.iterTime, TotalIters: j.totalIters, PM: j.pm, Loc: j.loc}
		r.Jobs = append(r.Jobs, jr)
		jcts = append(jcts, jr.JCT)
		first = min(first, j.submit)
		r.LastFinish = max(r.LastFinish, j.finish)
	}
	if len(jcts) > 0 {
		var sum float64
		for _, x := range jcts {
			sum += x
		}
		r.AvgJCT = sum / float64(len(jcts))
		slices.Sort(jcts)
		r.P99JCT = jcts[int(math.Floor(0.99*float64(len(jcts))))]
		if n := len(jcts); n%2 == 1 {
			r.MedianJCT = jcts[n/2]
		} else {
			r.MedianJCT = (jcts[n/2-1] + jcts[n/2]) / 2
		}
		r.Makespan = r.LastFinish - first
	}
	var busy float64
	for _, s := range d.rounds {
		busy += 1 - float64(s.FreeBefore)/float64(len(d.owner))
	}
	if len(d.rounds) > 0 {
		r.Utilisation = busy / float64(len(d.rounds))
	}
	return r
}

// Run simulates trace under c on data to the completion of every tracked
// job; ctx stops it between rounds (with what completed so far).
func Run(ctx context.Context, data *Data, trace []TraceJob, c Config) (*Result, error) {
	d, err := NewDriver(data, trace, c)
	if err != nil {
		return nil, err
	}
	for !d.Done() {
		if err := ctx.Err(); err != nil {
			return d.Result(), err
		}
		d.Step()
	}
	return d.Result(), nil
}
