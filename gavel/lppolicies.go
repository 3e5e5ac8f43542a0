package gavel

import (
	"fmt"
	"math"
)

// The linear-programming policies of the Gavel paper (§4), in the round
// mechanism's terms: each recomputation of the allocation solves a linear
// program over x[i][w], the fraction of time job i should have on type w,
// always under the same two limits (docs/internals/gavel.md writes each out):
//
//   - a job runs at most all the time: Σ_w x[i][w] ≤ 1;
//   - a type's GPUs are not over-allocated: Σ_i scale_i · x[i][w] ≤ N_w.
//
// The objectives differ. Only the types the cluster has are variables;
// a job's rate T[i][w] is its steps/s alone at its scale factor.

// lpJobs is the variable layout of one recomputation: job i's time on
// the k-th registered type is variable i·len(types)+k; extra variables
// (a level, a rate) come after.
type lpJobs struct {
	v     *View
	types []int
}

func newLPJobs(v *View) lpJobs {
	s := lpJobs{v: v}
	for w := range numTypes {
		if v.Counts[w] > 0 {
			s.types = append(s.types, w)
		}
	}
	return s
}

// vars is the number of x variables.
func (s lpJobs) vars() int { return len(s.v.Jobs) * len(s.types) }

// x is the index of job i's time on the k-th type.
func (s lpJobs) x(i, k int) int { return i*len(s.types) + k }

// limits adds the two limits every policy shares to p (of n variables).
func (s lpJobs) limits(p *program, n int) {
	for i := range s.v.Jobs {
		r := make([]float64, n)
		for k := range s.types {
			r[s.x(i, k)] = 1
		}
		p.row(r, 1)
	}
	for k, w := range s.types {
		r := make([]float64, n)
		for i, j := range s.v.Jobs {
			r[s.x(i, k)] = float64(j.Scale)
		}
		p.row(r, float64(s.v.Counts[w]))
	}
}

// allocation reads an allocation from a solution, clipped to [0, 1] as
// the reference clips its solver's.
func (s lpJobs) allocation(x []float64) Allocation {
	out := Allocation{}
	for i, j := range s.v.Jobs {
		var a [numTypes]float64
		for k, w := range s.types {
			a[w] = min(1, max(0, x[s.x(i, k)]))
		}
		out[Single(j.ID)] = a
	}
	return out
}

// levelProgram is the shape every level-seeking program here has:
// maximise a level L subject to the limits and, for each job i whose
// weight(i) is not 0, weight(i)·L ≤ Σ_w coef(i, w)·x[i][w]. It returns
// the solution (in the job-by-type layout of x, with L last) and L.
//
// Jobs alike to the program — the same weight, scale factor and
// coefficient on every type, as every job of one type and scale is
// under max-min fairness — are solved as one group (levelGroups): a
// variable per group and type, each member's time, under the capacity
// rows Σ_g members_g·scale_g·y[g][w] ≤ N_w. The grouped program has the
// full one's optimum: any optimal x, averaged over each group's members,
// keeps every row (each is linear and the same for every member) and the
// level; and each member given its group's y is a solution of the full
// program. So the program's size is set by the distinct kinds of job,
// not by how many are active (26 job types on a single-GPU trace, where
// the paper's 108-GPU cluster has hundreds of jobs at a time). Among the
// optima it picks one that treats alike jobs alike, as the analytic
// centre of the optimal face, which an interior-point solver (the
// reference's ECOS) approaches, does (reasoned, not checked against it).
func (s lpJobs) levelProgram(weight func(i int) float64, coef func(i, w int) float64) ([]float64, float64, error) {
	groups, of := s.levelGroups(weight, coef)
	nt := len(s.types)
	n := len(groups)*nt + 1
	level := n - 1
	p := newProgram(n)
	p.objective[level] = 1
	for g := range groups {
		r := make([]float64, n)
		for k := range s.types {
			r[g*nt+k] = 1
		}
		p.row(r, 1)
	}
	for k, w := range s.types {
		r := make([]float64, n)
		for g, grp := range groups {
			r[g*nt+k] = float64(grp.members * grp.scale)
		}
		p.row(r, float64(s.v.Counts[w]))
	}
	for g, grp := range groups {
		if grp.weight == 0 {
			continue
		}
		r := make([]float64, n)
		r[level] = grp.weight
		for k := range s.types {
			r[g*nt+k] = -grp.coef[k]
		}
		p.row(r, 0)
	}
	y, value, err := p.solve()
	if err != nil {
		return nil, 0, err
	}
	x := make([]float64, s.vars()+1)
	for i := range s.v.Jobs {
		for k := range s.types {
			x[s.x(i, k)] = y[of[i]*nt+k]
		}
	}
	x[len(x)-1] = y[level]
	return x, value, nil
}

// levelGroup is one kind of job in a level program: its weight, its scale
// factor and its coefficient on each of the cluster's types (in
// lpJobs.types order), and how many active jobs are of it.
type levelGroup struct {
	weight  float64
	scale   int
	coef    [numTypes]float64
	members int
}

// levelGroups groups the view's jobs by what the level program sees of
// them, in order of each group's first job (so the program, and the
// simplex's path through it, are the same for the same view). of[i] is
// job i's group. ungroupedLevelPrograms (tests) gives every job a group
// of its own: the full program, to check the grouped one against.
func (s lpJobs) levelGroups(weight func(i int) float64, coef func(i, w int) float64) (groups []levelGroup, of []int) {
	of = make([]int, len(s.v.Jobs))
	index := map[levelGroup]int{}
	for i, j := range s.v.Jobs {
		key := levelGroup{weight: weight(i), scale: j.Scale}
		for k, w := range s.types {
			key.coef[k] = coef(i, w)
		}
		g, ok := index[key]
		if !ok || ungroupedLevelPrograms {
			g = len(groups)
			index[key] = g
			groups = append(groups, key)
		}
		groups[g].members++
		of[i] = g
	}
	return groups, of
}

// ungroupedLevelPrograms, when set (by tests), solves every level program
// job by job, as written, without grouping alike jobs.
var ungroupedLevelPrograms bool

// maxMin solves max t subject to t ≤ Σ_w coef[i][w]·x[i][w] for every
// job i and the limits: the max-min program. It returns the solution and
// the level t.
func (s lpJobs) maxMin(coef func(i, w int) float64) ([]float64, float64, error) {
	return s.levelProgram(func(int) float64 { return 1 }, coef)
}

// typeNeutral spreads each job's total time in x over the types in
// proportion to their GPUs: the heterogeneity-agnostic policies' choice
// among their optima. Their objective sees only each job's total time,
// so the program has as many optima as ways to split it; a simplex
// returns a vertex, which may put one job wholly on K80s and another on
// V100s — a preference for types the policy is meant not to have. The
// split keeps every limit (a type's share of Σ_i scale_i·total_i ≤ N is
// at most its N_w) and every total, so the objective.
func (s lpJobs) typeNeutral(x []float64) {
	total := 0
	for _, w := range s.types {
		total += s.v.Counts[w]
	}
	for i := range s.v.Jobs {
		sum := 0.0
		for k := range s.types {
			sum += x[s.x(i, k)]
		}
		for k, w := range s.types {
			x[s.x(i, k)] = sum * float64(s.v.Counts[w]) / float64(total)
		}
	}
}

// agnostic is max-min fairness blind to heterogeneity (the reference's
// MaxMinFairness, the paper's LAS baseline): every rate taken as 1, so
// job i's objective is scale_i × its total time; type-neutral.
func (s lpJobs) agnostic() ([]float64, error) {
	x, _, err := s.maxMin(func(i, _ int) float64 { return float64(s.v.Jobs[i].Scale) })
	if err != nil {
		return nil, err
	}
	s.typeNeutral(x)
	return x, nil
}

// isolatedRates are each job's steps/s under the agnostic allocation
// (rates as measured): what "isolated" means to the _Perf policies,
// which normalise by it.
func (s lpJobs) isolatedRates(rates func(i, w int) float64) ([]float64, error) {
	x, err := s.agnostic()
	if err != nil {
		return nil, err
	}
	return s.ratesUnder(x, rates), nil
}

// ratesUnder are each job's steps/s under allocation x.
func (s lpJobs) ratesUnder(x []float64, rates func(i, w int) float64) []float64 {
	out := make([]float64, len(s.v.Jobs))
	for i := range s.v.Jobs {
		for k, w := range s.types {
			out[i] += rates(i, w) * x[s.x(i, k)]
		}
	}
	return out
}

func (s lpJobs) rate(i, w int) float64 { return s.v.Jobs[i].Rates[w] }

func unitRate(int, int) float64 { return 1 }

// maxMinFairness is max-min fairness (§4.1, LAS): maximise the least
// normalised throughput. Agnostic (MaxMinFairness): every rate 1 and no
// normalisation — the least scale × time. Heterogeneity-aware
// (MaxMinFairness_Perf): job i's throughput Σ_w T[i][w]·x[i][w] × scale_i
// over its throughput under the agnostic allocation.
type maxMinFairness struct{ perf bool }

// Name is the reference's name.
func (p maxMinFairness) Name() string {
	if p.perf {
		return "MaxMinFairness_Perf"
	}
	return "MaxMinFairness"
}

// Allocate solves the program.
func (p maxMinFairness) Allocate(v *View) Allocation {
	s := newLPJobs(v)
	if len(v.Jobs) == 0 {
		return Allocation{}
	}
	if !p.perf {
		x, err := s.agnostic()
		return s.mustAllocation(p, x, err)
	}
	iso, err := s.isolatedRates(s.rate)
	if err != nil {
		return s.mustAllocation(p, nil, err)
	}
	x, _, err := s.maxMin(func(i, w int) float64 {
		if iso[i] <= 0 {
			return 0 // it runs on no type it was given time on
		}
		return s.rate(i, w) * float64(v.Jobs[i].Scale) / iso[i]
	})
	return s.mustAllocation(p, x, err)
}

// mustAllocation is x's allocation; a program the simplex failed on is a
// bug in its formulation (every one here is feasible at x = 0 and
// bounded by the limits), so it panics naming the policy.
func (s lpJobs) mustAllocation(p Policy, x []float64, err error) Allocation {
	if err != nil {
		panic(fmt.Sprintf("gavel: %s at %v s with %d jobs: %v", p.Name(), s.v.Now, len(s.v.Jobs), err))
	}
	return s.allocation(x)
}

// maxSumThroughput maximises the cluster's summed throughput, Σ T·x in
// steps/s as measured (the reference's ThroughputSumWithPerf; no
// normalisation, so a type of many small steps weighs more).
type maxSumThroughput struct{}

// Name is the reference's name.
func (maxSumThroughput) Name() string { return "ThroughputSumWithPerf" }

// Allocate solves the program.
func (p maxSumThroughput) Allocate(v *View) Allocation {
	s := newLPJobs(v)
	if len(v.Jobs) == 0 {
		return Allocation{}
	}
	n := s.vars()
	prog := newProgram(n)
	s.limits(prog, n)
	for i := range v.Jobs {
		for k, w := range s.types {
			prog.objective[s.x(i, k)] = s.rate(i, w)
		}
	}
	x, _, err := prog.solve()
	return s.mustAllocation(p, x, err)
}

// minTotalDuration minimises the makespan of the active jobs (§4.1): the
// least T such that every job can run its remaining steps within T at
// its allocation's throughput. As a linear program in z = 1/T: maximise
// z subject to z·remaining_i ≤ Σ_w T[i][w]·x[i][w]. (The reference
// searches T by bisection to within 5 %; this is the exact optimum.)
type minTotalDuration struct{}

// Name is the reference's name (its min_total_duration is heterogeneity-aware).
func (minTotalDuration) Name() string { return "MinTotalDuration_Perf" }

// Allocate solves the program.
func (p minTotalDuration) Allocate(v *View) Allocation {
	s := newLPJobs(v)
	if len(v.Jobs) == 0 {
		return Allocation{}
	}
	x, _, err := s.minTotalDuration()
	return s.mustAllocation(p, x, err)
}

// minTotalDuration is the makespan program: its solution and z (1/T).
func (s lpJobs) minTotalDuration() ([]float64, float64, error) {
	// The level is z × the largest remaining steps, so that its
	// coefficients (remaining over the largest, ≤ 1) sit beside the
	// rates (steps/s) rather than 10^6 times over them.
	largest := 0.0
	for _, j := range s.v.Jobs {
		largest = max(largest, j.Remaining)
	}
	x, v, err := s.levelProgram(func(i int) float64 { return s.v.Jobs[i].Remaining / largest }, s.rate)
	return x, v / largest, err
}

// finishTimeFairness is Themis's finish-time fairness (§4.1): minimise
// the largest ρ_i, job i's expected finish time under the allocation
// over its expected finish time under the isolated (agnostic)
// allocation, each counted from its arrival:
//
//	ρ_i = (t_i + r_i / thr_i(x)) / (t_i + r_i / iso_i)
//
// with t_i the time since it arrived, r_i its remaining steps, thr_i(x) =
// Σ_w T[i][w]·x[i][w]. Agnostic (FinishTimeFairness) takes every rate as
// 1, as the reference does. ρ ≤ c holds for every job exactly when an
// allocation gives each job at least r_i / (c·E_i − t_i) steps/s (E_i its
// isolated finish time): a linear program's feasibility, so the least
// c is found by bisection, each step a program. The isolated allocation
// itself has ρ = 1 for all, so c ≤ 1.
type finishTimeFairness struct{ perf bool }

// Name is the reference's name.
func (p finishTimeFairness) Name() string {
	if p.perf {
		return "FinishTimeFairness_Perf"
	}
	return "FinishTimeFairness"
}

// ftfBisections bounds the bisection on ρ: 60 halvings of an interval
// below 1 reach float64's resolution.
const ftfBisections = 60

// ftfTolerance ends the bisection once ρ is known to 1e-8 relative: a
// hundredth of the 1e-6 the optimum is checked to.
const ftfTolerance = 1e-8

// Allocate finds the least ρ and its allocation.
func (p finishTimeFairness) Allocate(v *View) Allocation {
	s := newLPJobs(v)
	if len(v.Jobs) == 0 {
		return Allocation{}
	}
	x, _, err := s.finishTimeFairness(p.perf)
	return s.mustAllocation(p, x, err)
}

// finishTimeFairness is the least ρ's allocation and ρ.
func (s lpJobs) finishTimeFairness(perf bool) ([]float64, float64, error) {
	rates := unitRate
	if perf {
		rates = s.rate
	}
	isoX, err := s.agnostic()
	if err != nil {
		return nil, 0, err
	}
	iso := s.ratesUnder(isoX, rates)
	since := make([]float64, len(s.v.Jobs))
	expected := make([]float64, len(s.v.Jobs))
	lo := 0.0
	for i, j := range s.v.Jobs {
		since[i] = s.v.Now - j.Arrival
		expected[i] = since[i] + j.Remaining/iso[i]
		if iso[i] <= 0 {
			expected[i] = math.Inf(1) // runs nowhere it was given time: any allocation does as well
		}
		lo = max(lo, since[i]/expected[i])
	}
	hi, best := 1.0, isoX
	for range ftfBisections {
		mid := (lo + hi) / 2
		if mid <= lo || mid >= hi || hi-lo <= ftfTolerance*hi {
			break
		}
		x, ok, err := s.ftfFeasible(rates, since, expected, mid)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			hi, best = mid, x
		} else {
			lo = mid
		}
	}
	return best, hi, nil
}

// ftfFeasible reports whether some allocation has ρ_i ≤ c for every job,
// and one: maximise s subject to s·need_i ≤ thr_i(x), need_i = r_i /
// (c·E_i − t_i); feasible when s ≥ 1.
func (s lpJobs) ftfFeasible(rates func(i, w int) float64, since, expected []float64, c float64) ([]float64, bool, error) {
	need := make([]float64, len(s.v.Jobs))
	largest := 0.0
	for i, j := range s.v.Jobs {
		if math.IsInf(expected[i], 1) {
			continue
		}
		slack := c*expected[i] - since[i]
		if slack <= 0 {
			return nil, false, nil
		}
		need[i] = j.Remaining / slack
		largest = max(largest, need[i])
	}
	if largest == 0 {
		return make([]float64, s.vars()+1), true, nil // nothing needs anything: x = 0 will do
	}
	// The level is s × the largest need, for the conditioning's sake
	// (as in minTotalDuration): feasible when it reaches that need. A
	// job with no need (it runs nowhere it was given time) has no row.
	x, reached, err := s.levelProgram(func(i int) float64 { return need[i] / largest }, rates)
	if err != nil {
		return nil, false, err
	}
	return x, reached >= largest, nil
}
