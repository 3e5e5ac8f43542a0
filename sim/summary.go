package sim

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// Percentile is the nearest-rank percentile of xs (p in 0..100): the
// smallest value with at least p% of the values at or below it, i.e. the
// value at rank ⌈p/100·n⌉ of the sorted values. NaN when xs is empty.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// Mean is the arithmetic mean of xs (NaN when empty).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// Delays are one priority's job completion times and queueing delays, in seconds.
type Delays struct {
	JCT, Queue []float64
}

// Summary is what a comparison prints for one run.
type Summary struct {
	Policy                                  string
	Seed                                    uint64
	Submitted, Completed, Rejected, Unended int
	// LostWithScheduler counts the unended jobs a scheduler without a
	// journal held, queued, when it was killed (StateLostWithScheduler):
	// no later scheduler knew them.
	LostWithScheduler int
	// ByPriority maps a priority name to its completed jobs' JCTs and its
	// started jobs' queueing delays.
	ByPriority map[string]*Delays
	// UtilMean is the time-mean of the cluster's mean GPU utilisation (%);
	// GPUsIdle the time-mean of GPUs with nothing on them; BusyGPUHours
	// the GPU-hours with something on them.
	UtilMean, GPUsIdle, BusyGPUHours float64
	EnergyKWh                        float64
	Preemptions                      int
	// LostGPUHours is work lost to preemption: Σ (lost_work_s −
	// fault_lost_work_s) × GPUs / 3600.
	LostGPUHours float64
	// Faults counts the faults that took jobs down; Requeued the jobs they
	// took down (a job each time); FaultGPUHours the work those lost;
	// RecoveryMean and RecoveryMax the time from a fault to the last of
	// its jobs running again.
	Faults, Requeued          int
	FaultGPUHours             float64
	RecoveryMean, RecoveryMax time.Duration
	// FragMean and FragMax are the FGD fragmentation F(M) in GPUs over
	// time; VRAMFragMean and VRAMFragMax the share of free VRAM outside
	// each GPU's largest hole, over time.
	FragMean, FragMax, VRAMFragMean, VRAMFragMax float64
	// SlowdownMean and SlowdownP95 are over completed GPU jobs (1: no
	// slowdown from co-location).
	SlowdownMean, SlowdownP95 float64
	Length, Wall              time.Duration
}

// Summarize computes a run's summary from its jobs and series alone, so
// that the files a run writes reproduce it.
func Summarize(r *Result) Summary {
	s := Summary{Policy: r.Policy, Seed: r.Seed, Submitted: len(r.Jobs), ByPriority: map[string]*Delays{},
		EnergyKWh: r.Final.EnergyKWh, Preemptions: r.Final.Preemptions, Length: r.Length, Wall: r.Wall}
	var slow []float64
	for i := range r.Jobs {
		j := &r.Jobs[i]
		d := s.ByPriority[j.Priority]
		if d == nil {
			d = &Delays{}
			s.ByPriority[j.Priority] = d
		}
		switch {
		case j.Completed():
			s.Completed++
			d.JCT = append(d.JCT, j.JCT())
			if j.GPUCount > 0 {
				slow = append(slow, j.Slowdown)
			}
		case j.State == events.JobRejected:
			s.Rejected++
		default:
			s.Unended++
			if j.State == StateLostWithScheduler {
				s.LostWithScheduler++
			}
		}
		if j.Started {
			d.Queue = append(d.Queue, j.QueueDelay())
		}
		gpus := float64(max(j.GPUCount, 1))
		s.LostGPUHours += (j.LostWorkS - j.FaultLostWorkS) * gpus / 3600
		s.FaultGPUHours += j.FaultLostWorkS * gpus / 3600
		s.Requeued += j.Lost
	}
	var recovery []float64
	for _, f := range r.Faults {
		if f.Recovered > 0 {
			recovery = append(recovery, f.RecoveredS)
		}
	}
	s.Faults = len(r.Faults)
	if len(recovery) > 0 {
		s.RecoveryMean = time.Duration(Mean(recovery) * float64(time.Second))
		s.RecoveryMax = time.Duration(slices.Max(recovery) * float64(time.Second))
	}
	s.SlowdownMean, s.SlowdownP95 = Mean(slow), Percentile(slow, 95)
	// Each sample stands for the interval since the one before it (the
	// first, since the start): time means weigh samples by their interval.
	var util, idle, frag, vfrag, busy timeMean
	prev := 0.0
	for _, x := range r.Series {
		w := x.T - prev
		prev = x.T
		util.add(x.UtilMean, w)
		idle.add(float64(x.GPUs-x.GPUsBusy), w)
		busy.add(float64(x.GPUsBusy), w)
		frag.add(x.FragAmount, w)
		vfrag.add(x.VRAMFragmentation, w)
	}
	s.UtilMean, s.GPUsIdle = util.mean(), idle.mean()
	s.BusyGPUHours = busy.sum / 3600
	s.FragMean, s.FragMax = frag.mean(), frag.max
	s.VRAMFragMean, s.VRAMFragMax = vfrag.mean(), vfrag.max
	return s
}

// timeMean accumulates a time-weighted mean and the maximum of a measure.
type timeMean struct {
	sum, weight, max float64
	n                int
}

func (m *timeMean) add(x, w float64) {
	if m.n == 0 || x > m.max {
		m.max = x
	}
	m.n++
	m.sum += x * w
	m.weight += w
}

func (m *timeMean) mean() float64 {
	if m.weight <= 0 {
		return math.NaN()
	}
	return m.sum / m.weight
}

// Priorities lists the priority names present in the summaries, highest first.
func Priorities(sums []Summary) []string {
	seen := map[string]model.Priority{}
	for _, s := range sums {
		for name := range s.ByPriority {
			p, err := model.ParsePriority(name)
			if err != nil {
				p = 0
			}
			seen[name] = p
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool {
		if seen[names[a]] != seen[names[b]] {
			return seen[names[a]] > seen[names[b]]
		}
		return names[a] < names[b]
	})
	return names
}
