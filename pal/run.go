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
// (§6): at its time, after the finished jobs left and before the
// placement, the GPUs free, which job holds which GPUs (the last round's
// placement, less what completed) with its slowdowns, and the jobs that
// wait.
type RoundStat struct {
	T       float64
	Free    int
	Alloc   map[int][]int
	PM, Loc map[int]float64
	Waiting int
}

// record fills the round's allocation from the jobs now running.
func (d *Driver) record(stat *RoundStat) {
	stat.Alloc, stat.PM, stat.Loc = map[int][]int{}, map[int]float64{}, map[int]float64{}
	for _, j := range d.jobs {
		switch {
		case j.running():
			stat.Alloc[j.id], stat.PM[j.id], stat.Loc[j.id] = slices.Clone(j.gpus), j.pm, j.loc
		case !j.done:
			stat.Waiting++
		}
	}
	stat.Free = d.freeCount()
}

// Driver is the artifact's round loop (§3), stepped one round at a time
// so that a live scheduler can drive the same decisions.
type Driver struct {
	cfg     Config
	data    *Data
	top     topology
	profile Profile
	levels  Levels
	entries [NumClasses][]palEntry
	rng     *pyrand.Rand // the scheduler process's: profile, then Random
	// jobs are every job arrived so far, by id.
	jobs      []*job
	owner     []int // job id per GPU, −1 when free
	now       float64
	rounds    []RoundStat
	finished  bool
	trackLeft int
	// completed are the jobs the last RoundEnded completed.
	completed []int
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
	d := &Driver{cfg: c, data: data, top: topology{c.PerMachine},
		rng: pyrand.New(c.ProfileSeed), owner: make([]int, gpus), trackLeft: c.TrackEnd - c.TrackStart + 1}
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

// Generator is the simulator process's workload (§2): the trace's jobs
// at their submit times, then, past the trace, copies of row id mod
// len(trace) arriving an exponential gap after the last (the artifact's
// poisson_next_arrival_time: −ln(1−U)/rate hours, ceiled to a whole
// second), U from CPython's generator seeded with the workload seed.
type Generator struct {
	trace []TraceJob
	rng   *pyrand.Rand
	rate  float64
	next  TraceJob
}

// NewGenerator is the workload of trace under c's workload seed and rate.
func NewGenerator(trace []TraceJob, c Config) *Generator {
	return &Generator{trace: trace, rng: pyrand.New(c.WorkloadSeed), rate: c.Rate, next: trace[0]}
}

// Peek is the next job, not taken.
func (g *Generator) Peek() TraceJob { return g.next }

// Next takes the next job.
func (g *Generator) Next() TraceJob {
	out := g.next
	id := out.ID + 1
	if id < len(g.trace) {
		g.next = g.trace[id]
		return out
	}
	hours := -crmath.Log(1.0-g.rng.Random()) / g.rate
	next := g.trace[id%len(g.trace)]
	next.ID = id
	next.Submit = out.Submit + math.Ceil(hours*60*60)
	g.next = next
	return out
}

// Step runs the round at Now (§3) with the generator's arrivals: the last
// round's progress and completions, the end test, the arrivals, the
// order, the placement; then the clock moves one round on.
func (d *Driver) Step(gen *Generator) {
	if d.RoundEnded(); d.finished {
		return
	}
	for gen.Peek().Submit <= d.now {
		if err := d.Arrive(gen.Next()); err != nil {
			panic(err) // the trace's jobs were checked by NewDriver
		}
	}
	d.Schedule()
}

// Completed are the jobs the last RoundEnded completed, in id order.
func (d *Driver) Completed() []int { return d.completed }

// Progress is the iterations job id has done.
func (d *Driver) Progress(id int) float64 { return d.jobs[id].executed }

// Slowdown is job id's slowest multiplier and locality penalty from its
// last launch (§1).
func (d *Driver) Slowdown(id int) (pm, loc float64) { return d.jobs[id].pm, d.jobs[id].loc }

// End is when job id completed, in seconds.
func (d *Driver) End(id int) float64 { return d.jobs[id].finish }

// RoundEnded is the first part of the round at Now (§3 steps 1–2): every
// job that ran in the last round adds its iterations and service, those
// done complete now and release their GPUs; if every tracked job is done
// the run ends. It returns Now.
func (d *Driver) RoundEnded() float64 {
	if d.finished {
		return d.now
	}
	t := d.now
	d.completed = d.completed[:0]
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
			d.completed = append(d.completed, j.id)
			if d.tracked(j.id) {
				d.trackLeft--
			}
		}
	}
	stat := RoundStat{T: t}
	d.record(&stat)
	d.rounds = append(d.rounds, stat)
	d.finished = d.trackLeft <= 0
	return t
}

// Arrive adds a job that has arrived by Now (§3 step 3). Its id must be
// the next (arrival order), its model known and its GPUs no more than the
// cluster has.
func (d *Driver) Arrive(tj TraceJob) error {
	m, ok := d.data.Models[tj.Model]
	switch {
	case tj.ID != len(d.jobs):
		return fmt.Errorf("job %d arrives as the %d-th: ids are the arrival order", tj.ID, len(d.jobs))
	case !ok:
		return fmt.Errorf("job %d: model %q is not in models.csv", tj.ID, tj.Model)
	case tj.GPUs < 1 || tj.GPUs > len(d.owner):
		return fmt.Errorf("job %d needs %d GPUs; the cluster has %d", tj.ID, tj.GPUs, len(d.owner))
	case tj.Submit > d.now:
		return fmt.Errorf("job %d arrives at %v s, after now (%v s)", tj.ID, tj.Submit, d.now)
	}
	d.jobs = append(d.jobs, &job{id: tj.ID, model: tj.Model, class: m.Class, gpusWanted: tj.GPUs,
		submit: tj.Submit, iterTime: m.IterTime, totalIters: tj.Duration})
	return nil
}

// Schedule is the rest of the round at Now (§3 steps 4–7): the order, the
// placement and its execution; then the clock moves one round on.
func (d *Driver) Schedule() {
	if d.finished {
		return
	}
	var active []*job
	for _, j := range d.jobs {
		if !j.done {
			active = append(active, j)
		}
	}
	d.place(order(d.cfg.Queue, active))
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
	// RoundStats are the rounds as each found the cluster (WriteRounds).
	RoundStats []RoundStat
}

// Result is the run's outcome so far: the tracked jobs that completed.
func (d *Driver) Result() *Result {
	r := &Result{Config: d.cfg, Rounds: len(d.rounds), RoundStats: d.rounds}
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
		busy += 1 - float64(s.Free)/float64(len(d.owner))
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
	gen := NewGenerator(trace, c)
	for !d.Done() {
		if err := ctx.Err(); err != nil {
			return d.Result(), err
		}
		d.Step(gen)
	}
	return d.Result(), nil
}
