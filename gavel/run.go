package gavel

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
)

// Config is one run of the reference simulator's driver
// (simulate_scheduler_with_generated_jobs.py; §2, §3).
type Config struct {
	// Policy is the policy's command-line name (fifo, isolated, allox,
	// gandiva).
	Policy string
	// Seed is the driver's --seed: every generator derives from it (§0).
	Seed uint64
	// Counts are the GPUs of each type (k80, p100, v100), one per server.
	Counts [numTypes]int
	// Lam is the mean inter-arrival time in seconds; 0 is the static
	// trace: WindowEnd jobs, all at time 0.
	Lam float64
	// WindowStart and WindowEnd are the measured jobs: ids WindowStart up
	// to WindowEnd−1. The run ends when they have all completed.
	WindowStart, WindowEnd int
	// MultiGPU lets jobs have scale factors above 1 (the driver's -m).
	MultiGPU bool
}

// Validate says what is wrong with c, naming the field.
func (c Config) Validate() error {
	if _, err := NewPolicy(c.Policy, 0); err != nil {
		return err
	}
	if c.Counts[K80]+c.Counts[P100]+c.Counts[V100] == 0 {
		return fmt.Errorf("cluster: no GPUs")
	}
	for w, n := range c.Counts {
		if n < 0 {
			return fmt.Errorf("cluster: %d %s GPUs", n, TypeNames[w])
		}
	}
	if c.Lam < 0 || math.IsNaN(c.Lam) || math.IsInf(c.Lam, 0) {
		return fmt.Errorf("lam: %v is not a mean inter-arrival time in seconds", c.Lam)
	}
	if c.WindowStart < 0 || c.WindowEnd <= c.WindowStart {
		return fmt.Errorf("window: %d-%d measures no job", c.WindowStart, c.WindowEnd)
	}
	if c.Lam == 0 && c.WindowStart != 0 {
		return fmt.Errorf("window: a static trace measures all its jobs, 0-%d", c.WindowEnd)
	}
	if c.Policy == "allox" && c.MultiGPU {
		return fmt.Errorf("multi-gpu: AlloX runs single-GPU jobs only")
	}
	if c.MultiGPU && max(c.Counts[K80], c.Counts[P100], c.Counts[V100]) < 8 {
		return fmt.Errorf("multi-gpu: jobs may need 8 GPUs of one type; the cluster has at most %d", max(c.Counts[K80], c.Counts[P100], c.Counts[V100]))
	}
	return nil
}

// Static reports whether c is a static trace (every job at time 0).
func (c Config) Static() bool { return c.Lam == 0 }

// JobResult is one job of a run: what was drawn and when it ended.
type JobResult struct {
	Job
	// JCT is its completion time less its arrival, in seconds; NaN when
	// it had not completed when the run stopped (only outside the window).
	JCT float64
	// InWindow reports whether it is measured.
	InWindow bool
}

// Result is a run: every generated job and the driver's figures (§6).
type Result struct {
	Config Config
	// PolicyName is the reference's name of the policy.
	PolicyName string
	Jobs       []JobResult
	// AverageJCT is the mean JCT of the window's jobs (numpy's pairwise sum).
	AverageJCT float64
	// Utilization is the mean over GPUs of busy time over the run's length.
	Utilization float64
	// Makespan is the run's length: when the last window job completed.
	Makespan float64
	// Completed counts every completed job, in the window or not.
	Completed int
	// Rounds counts the rounds scheduled.
	Rounds int
}

// maxIdleRounds bounds how many rounds in a row may schedule nothing
// while jobs wait and none will arrive (the static-trace hazard of §3:
// the reference would loop for ever).
const maxIdleRounds = 3

// Run simulates c on data as the reference does (§3): events are the
// ends of rounds, the clock jumps to the latest finish of the round's
// tasks (or to the next arrival when nothing ran), finished tasks are
// accounted, arrivals added, and the next round scheduled. ctx stops it
// between rounds. The loop is a Driver fed by the generator.
func Run(ctx context.Context, data *Data, c Config) (*Result, error) {
	d, err := NewDriver(data, c)
	if err != nil {
		return nil, err
	}
	gen := NewGenerator(data, c.Seed, c.Lam, c.MultiGPU)
	for !d.Done() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		now := d.RoundEnded(gen.NextArrival())
		if d.Done() {
			break
		}
		for gen.NextArrival() <= now && (!c.Static() || d.Arrived() < c.WindowEnd) {
			if err := d.Arrive(gen.Next()); err != nil {
				return nil, err
			}
		}
		if err := d.Schedule(); err != nil {
			return nil, err
		}
	}
	return d.Result(), nil
}

// Driver is the reference simulator's main loop (§3) stepped from
// outside: whoever holds it says when a round has ended (every task of
// the last round finished) and which jobs arrive, and it accounts the
// round, adds the arrivals and schedules the next round's tasks. Run
// drives it from the generator; a live scheduler can drive it from its
// GPUs' reports and its submissions. The reference's quirks live here
// once: a round's start is the last round's end, also across a gap when
// nothing ran (its tasks' execution time then counts the gap).
type Driver struct {
	cfg    Config
	data   *Data
	policy Policy
	rounds *Rounds
	busy   []float64
	order  []*jobState
	tasks  []Task

	now, roundStart, roundEnd float64
	hasRoundEnd               bool
	// lastCompleted are the jobs the last RoundEnded completed.
	lastCompleted        []int
	windowLeft           int
	completed, scheduled int
	idle                 int
}

// NewDriver is the loop of c on data, before its first round.
func NewDriver(data *Data, c Config) (*Driver, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	policy, _ := NewPolicy(c.Policy, c.Seed)
	return &Driver{cfg: c, data: data, policy: policy, rounds: NewRounds(data, c.Counts, policy, c.Seed),
		busy: make([]float64, c.Counts[K80]+c.Counts[P100]+c.Counts[V100]), windowLeft: c.WindowEnd - c.WindowStart}, nil
}

// Tasks are the round in progress: what Schedule last chose.
func (d *Driver) Tasks() []Task { return d.tasks }

// Now is the loop's time in seconds.
func (d *Driver) Now() float64 { return d.now }

// Arrived counts the jobs added so far.
func (d *Driver) Arrived() int { return len(d.order) }

// Done reports whether every measured job has completed.
func (d *Driver) Done() bool { return d.windowLeft <= 0 }

// RoundEnded ends the round in progress: the clock moves to the latest
// finish of its tasks, or, when it had none, to nextArrival (the next
// job's arrival); each finished task is accounted, the latest finish
// first and equal finishes by id, as the reference does. It returns the
// new time.
func (d *Driver) RoundEnded(nextArrival float64) float64 {
	if len(d.tasks) > 0 {
		latest := d.tasks[0].Finish
		for _, t := range d.tasks {
			latest = max(latest, t.Finish)
		}
		if d.hasRoundEnd {
			d.roundStart = d.roundEnd
		}
		d.roundEnd, d.hasRoundEnd, d.now = latest, true, latest
	} else {
		d.now = nextArrival
	}
	slices.SortFunc(d.tasks, func(a, b Task) int {
		return cmp.Or(cmp.Compare(b.Finish, a.Finish), compareIDs(a.ID, b.ID))
	})
	d.lastCompleted = d.lastCompleted[:0]
	for _, t := range d.tasks {
		for _, j := range d.rounds.Finish(t, d.roundStart, d.busy) {
			d.lastCompleted = append(d.lastCompleted, j)
			d.completed++
			if j >= d.cfg.WindowStart && j < d.cfg.WindowEnd {
				d.windowLeft--
			}
		}
	}
	d.tasks = nil
	return d.now
}

// Completed are the jobs the last RoundEnded completed, in the order it
// accounted them.
func (d *Driver) Completed() []int { return d.lastCompleted }

// Progress is the steps job id has done so far.
func (d *Driver) Progress(id int) float64 { return d.rounds.jobs[id].done }

// End is when job id completed (its last task's finish), in seconds.
func (d *Driver) End(id int) float64 { return d.rounds.jobs[id].end }

// Arrive adds a job that has arrived by now. A measured job that can run
// on no type of the cluster is an error: the run would never end.
func (d *Driver) Arrive(job Job) error {
	if job.ID >= d.cfg.WindowStart && job.ID < d.cfg.WindowEnd && !runnableOn(d.data, d.cfg.Counts, job) {
		return fmt.Errorf("job %d (%s on %d GPUs) can never run on this cluster: its rate is 0 on every GPU type the cluster has, or it needs more GPUs of one type than there are; the run would never end", job.ID, job.Type, job.Scale)
	}
	d.rounds.Add(job)
	d.order = append(d.order, d.rounds.jobs[job.ID])
	return nil
}

// Schedule chooses the next round's tasks at now (Tasks). A static trace
// whose rounds run nothing while jobs wait is an error after
// maxIdleRounds: it has no arrival to wait for.
func (d *Driver) Schedule() error {
	d.tasks = d.rounds.Schedule(d.now)
	d.scheduled++
	if len(d.tasks) == 0 && d.cfg.Static() {
		if d.idle++; d.idle > maxIdleRounds {
			return fmt.Errorf("%s at %.0f s: %d rounds in a row ran nothing while jobs wait, and a static trace has no arrival to wait for (the reference would move its clock back to 0 and loop)", d.policy.Name(), d.now, d.idle)
		}
	} else {
		d.idle = 0
	}
	return nil
}

// Result is the run's outcome so far (§6): every added job, the window's
// average JCT, utilisation over the time reached.
func (d *Driver) Result() *Result {
	res := &Result{Config: d.cfg, PolicyName: d.policy.Name(), Makespan: d.now, Completed: d.completed, Rounds: d.scheduled}
	var jcts []float64
	for _, js := range d.order {
		jr := JobResult{Job: js.Job, JCT: math.NaN(), InWindow: js.ID >= d.cfg.WindowStart && js.ID < d.cfg.WindowEnd}
		if js.completed {
			jr.JCT = js.end - js.Arrival
		}
		if jr.InWindow {
			jcts = append(jcts, jr.JCT)
		}
		res.Jobs = append(res.Jobs, jr)
	}
	res.AverageJCT = pairwiseSum(jcts) / float64(len(jcts))
	shares := make([]float64, len(d.busy))
	for g := range d.busy {
		shares[g] = d.busy[g] / (d.now - 0)
	}
	res.Utilization = pairwiseSum(shares) / float64(len(d.busy))
	return res
}

// runnableOn reports whether job can run on some type of the cluster:
// enough GPUs of it and a positive rate there.
func runnableOn(data *Data, counts [numTypes]int, job Job) bool {
	for w := range numTypes {
		if counts[w] >= job.Scale && data.alone[w][job.Template][scaleIndex(job.Scale)] > 0 {
			return true
		}
	}
	return false
}

// pairwiseSum is numpy's sum of a float64 array (pairwise_sum in
// numpy/core/src/umath/loops_utils.h): below 8 items one by one; up to
// 128 (its block size) eight running sums combined as a tree, then the
// rest one by one; above, the two halves (the first a multiple of 8)
// summed apart. np.mean is this sum over the count.
func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		s := 0.0
		for _, x := range a {
			s += x
		}
		return s
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for k := range 8 {
				r[k] += a[i+k]
			}
		}
		s := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			s += a[i]
		}
		return s
	default:
		half := n / 2
		half -= half % 8
		return pairwiseSum(a[:half]) + pairwiseSum(a[half:])
	}
}
