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
// between rounds.
func Run(ctx context.Context, data *Data, c Config) (*Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	policy, _ := NewPolicy(c.Policy, c.Seed)
	rounds := NewRounds(data, c.Counts, policy, c.Seed)
	gen := NewGenerator(data, c.Seed, c.Lam, c.MultiGPU)
	gpus := c.Counts[K80] + c.Counts[P100] + c.Counts[V100]
	busy := make([]float64, gpus)
	var order []*jobState
	now, roundStart, roundEnd, hasRoundEnd := 0.0, 0.0, 0.0, false
	windowLeft := c.WindowEnd - c.WindowStart
	var tasks []Task
	res := &Result{Config: c, PolicyName: policy.Name()}
	idle := 0
	for windowLeft > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(tasks) > 0 {
			latest := tasks[0].Finish
			for _, t := range tasks {
				latest = max(latest, t.Finish)
			}
			if hasRoundEnd {
				roundStart = roundEnd
			}
			roundEnd, hasRoundEnd, now = latest, true, latest
		} else {
			now = gen.NextArrival()
		}
		// Completions: latest finish first, equal finishes by id.
		slices.SortFunc(tasks, func(a, b Task) int {
			return cmp.Or(cmp.Compare(b.Finish, a.Finish), compareIDs(a.ID, b.ID))
		})
		for _, t := range tasks {
			for _, j := range rounds.Finish(t, roundStart, busy) {
				res.Completed++
				if j >= c.WindowStart && j < c.WindowEnd {
					windowLeft--
				}
			}
		}
		if windowLeft == 0 {
			break
		}
		for gen.NextArrival() <= now && (!c.Static() || len(order) < c.WindowEnd) {
			job := gen.Next()
			if job.ID >= c.WindowStart && job.ID < c.WindowEnd && !runnableOn(data, c.Counts, job) {
				return nil, fmt.Errorf("job %d (%s on %d GPUs) can never run on this cluster: its rate is 0 on every GPU type the cluster has, or it needs more GPUs of one type than there are; the run would never end", job.ID, job.Type, job.Scale)
			}
			rounds.Add(job)
			order = append(order, rounds.jobs[job.ID])
		}
		tasks = rounds.Schedule(now)
		res.Rounds++
		if len(tasks) == 0 && c.Static() {
			if idle++; idle > maxIdleRounds {
				return nil, fmt.Errorf("%s at %.0f s: %d rounds in a row ran nothing while jobs wait, and a static trace has no arrival to wait for (the reference would move its clock back to 0 and loop)", policy.Name(), now, idle)
			}
		} else {
			idle = 0
		}
	}
	res.Makespan = now
	var jcts []float64
	for _, js := range order {
		jr := JobResult{Job: js.Job, JCT: math.NaN(), InWindow: js.ID >= c.WindowStart && js.ID < c.WindowEnd}
		if js.completed {
			jr.JCT = js.end - js.Arrival
		}
		if jr.InWindow {
			jcts = append(jcts, jr.JCT)
		}
		res.Jobs = append(res.Jobs, jr)
	}
	res.AverageJCT = pairwiseSum(jcts) / float64(len(jcts))
	shares := make([]float64, gpus)
	for g := range busy {
		shares[g] = busy[g] / (now - 0)
	}
	res.Utilization = pairwiseSum(shares) / float64(gpus)
	return res, nil
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
