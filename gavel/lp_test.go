package gavel

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpusched/gpusched/internal/tracedir"
)

// lpPolicies are the linear-programming policies by command-line name.
var lpPolicies = []string{"max_min_fairness", "max_min_fairness_perf", "finish_time_fairness", "finish_time_fairness_perf",
	"min_total_duration", "max_sum_throughput_perf"}

// checkOptima sets verifySolution for the test: every program solved must
// have its solution within its limits and its value equal to its dual's
// optimum (strong duality, found by a second program) to 1e-6 relative.
// It returns how many programs were checked.
func checkOptima(t *testing.T) *int {
	t.Helper()
	n := 0
	verifySolution = func(p *program, x []float64, value float64) {
		n++
		for j, v := range x {
			if v < -1e-9 {
				t.Fatalf("program %d: x[%d] = %v < 0", n, j, v)
			}
		}
		got := 0.0
		for j, c := range p.objective {
			got += c * x[j]
		}
		if math.Abs(got-value) > 1e-9*max(1, math.Abs(value)) {
			t.Fatalf("program %d: objective·x = %v, the solver says %v", n, got, value)
		}
		for i, r := range p.rows {
			lhs := 0.0
			for j, c := range r {
				lhs += c * x[j]
			}
			if lhs > p.bounds[i]+1e-9*max(1, p.bounds[i]) {
				t.Fatalf("program %d: row %d is %v, over its bound %v", n, i, lhs, p.bounds[i])
			}
		}
		dual, err := p.dualValue()
		if err != nil {
			t.Fatalf("program %d: the dual: %v", n, err)
		}
		if math.Abs(dual-value) > 1e-6*max(1e-12, math.Abs(value)) && math.Abs(dual-value) > 1e-12 {
			t.Fatalf("program %d: optimum %v, the dual's %v (relative gap %.2e)", n, value, dual, math.Abs(dual-value)/math.Abs(value))
		}
	}
	t.Cleanup(func() { verifySolution = nil })
	return &n
}

// randomView is a recomputation of the project's own making: up to 8
// jobs (the dual's check is slow beyond: gonum's simplex is dense) of
// random rates (some types unrunnable), scale factors, remaining steps
// and ages on a random cluster, drawn from seed.
func randomView(seed uint64) *View {
	rng := rand.New(rand.NewPCG(seed, 40))
	v := &View{Now: 1e5}
	for w := range numTypes {
		v.Counts[w] = rng.IntN(9) // a type may be missing
	}
	if v.Counts[V100] == 0 {
		v.Counts[V100] = 4
	}
	for id := range 1 + rng.IntN(8) {
		j := JobView{ID: id, Scale: []int{1, 1, 1, 2, 4}[rng.IntN(5)], Arrival: rng.Float64() * v.Now, Remaining: 1 + rng.Float64()*1e6}
		for w := range numTypes {
			if rng.IntN(6) > 0 {
				j.Rates[w] = 0.1 + rng.Float64()*20
			}
		}
		j.Rates[V100] = 0.1 + rng.Float64()*20 // runs somewhere
		v.Jobs = append(v.Jobs, j)
	}
	return v
}

// TestLPPoliciesFindTheOptimum: on 25 random recomputations each LP
// policy's every program is feasible and optimal (its dual agrees), its
// allocation keeps the limits, and the finish-time-fairness bisection
// ends at the least ρ: an allocation reaching it exists and none 1e-6
// below it does.
func TestLPPoliciesFindTheOptimum(t *testing.T) {
	checked := checkOptima(t)
	for seed := range uint64(25) {
		v := randomView(seed)
		for _, name := range lpPolicies {
			p, err := NewPolicy(name, seed)
			if err != nil {
				t.Fatal(err)
			}
			x := p.Allocate(v)
			if err := withinLimits(v, x); err != nil {
				t.Fatalf("seed %d, %s: %v", seed, name, err)
			}
		}
		for _, perf := range []bool{false, true} {
			s := newLPJobs(v)
			_, rho, err := s.finishTimeFairness(perf)
			if err != nil {
				t.Fatal(err)
			}
			rates := unitRate
			if perf {
				rates = s.rate
			}
			iso, _ := s.isolatedRates(rates)
			since, expected := make([]float64, len(v.Jobs)), make([]float64, len(v.Jobs))
			for i, j := range v.Jobs {
				since[i] = v.Now - j.Arrival
				expected[i] = since[i] + j.Remaining/iso[i]
			}
			if _, ok, _ := s.ftfFeasible(rates, since, expected, rho*(1+1e-6)); !ok && rho < 1 {
				t.Errorf("seed %d: ρ %v found, but no allocation reaches ρ×(1+1e-6)", seed, rho)
			}
			if _, ok, _ := s.ftfFeasible(rates, since, expected, rho*(1-1e-6)); ok {
				t.Errorf("seed %d: ρ %v found, but an allocation reaches ρ×(1−1e-6)", seed, rho)
			}
		}
	}
	if *checked < 25*len(lpPolicies) {
		t.Fatalf("%d programs checked, want at least one per policy and view", *checked)
	}
}

// withinLimits checks an allocation against the two limits.
func withinLimits(v *View, x Allocation) error {
	var used [numTypes]float64
	for _, j := range v.Jobs {
		a, ok := x[Single(j.ID)]
		if !ok {
			return fmt.Errorf("job %d has no allocation", j.ID)
		}
		sum := 0.0
		for w := range numTypes {
			if a[w] < 0 || (v.Counts[w] == 0 && a[w] != 0) {
				return fmt.Errorf("job %d: %v on %s", j.ID, a[w], TypeNames[w])
			}
			sum += a[w]
			used[w] += float64(j.Scale) * a[w]
		}
		if sum > 1+1e-9 {
			return fmt.Errorf("job %d has %v of the time", j.ID, sum)
		}
	}
	for w := range numTypes {
		if used[w] > float64(v.Counts[w])+1e-6 {
			return fmt.Errorf("%s: %v GPUs allocated of %d", TypeNames[w], used[w], v.Counts[w])
		}
	}
	return nil
}

// TestLPPoliciesOnAGeneratedRun: every program the heterogeneity-aware
// max-min, finish-time-fairness and makespan policies solve over a
// static run of the Gavel workload (10 multi-GPU jobs on 8:2:2; the dual's check is slow beyond, see randomView) is
// optimal, and the run completes every job.
func TestLPPoliciesOnAGeneratedRun(t *testing.T) {
	data, err := Load(tracedir.Gavel(t))
	if err != nil {
		t.Fatal(err)
	}
	checked := checkOptima(t)
	for _, name := range []string{"max_min_fairness_perf", "finish_time_fairness_perf", "min_total_duration"} {
		res, err := Run(context.Background(), data, Config{Policy: name, Counts: [numTypes]int{K80: 2, P100: 2, V100: 8}, WindowEnd: 10, MultiGPU: true})
		if err != nil {
			t.Fatal(name, err)
		}
		for _, j := range res.Jobs {
			if j.InWindow && math.IsNaN(j.JCT) {
				t.Fatalf("%s: job %d did not complete", name, j.ID)
			}
		}
	}
	if *checked < 50 {
		t.Fatalf("only %d programs checked", *checked)
	}
	t.Logf("%d programs checked", *checked)
}

// withinPackedLimits is withinLimits for an allocation with pairs: each
// job's time alone and in its pairs is at most 1, each type's GPUs (a
// pair's counted once) are not over-allocated.
func withinPackedLimits(v *View, x Allocation) error {
	var used [numTypes]float64
	time := map[int]float64{}
	scale := map[int]int{}
	for _, j := range v.Jobs {
		scale[j.ID] = j.Scale
		if _, ok := x[Single(j.ID)]; !ok {
			return fmt.Errorf("job %d has no allocation", j.ID)
		}
	}
	for id, a := range x {
		for w := range numTypes {
			if a[w] < 0 || (v.Counts[w] == 0 && a[w] != 0) {
				return fmt.Errorf("%v: %v on %s", id, a[w], TypeNames[w])
			}
			for _, m := range id.Members() {
				time[m] += a[w]
			}
			used[w] += float64(scale[id.A]) * a[w]
		}
	}
	for j, t := range time {
		if t > 1+1e-9 {
			return fmt.Errorf("job %d has %v of the time", j, t)
		}
	}
	for w := range numTypes {
		if used[w] > float64(v.Counts[w])+1e-6 {
			return fmt.Errorf("%s: %v GPUs allocated of %d", TypeNames[w], used[w], v.Counts[w])
		}
	}
	return nil
}

// TestMaxMinFairnessPackedIsOptimalAndPacks: on views of the Gavel
// workload (six jobs on one GPU of each type: room is scarce, so sharing
// pays) every program the packed max-min policy solves is optimal (its
// dual agrees), its allocation keeps the limits with pairs counted as the
// program counts them, and it gives pairs time; a static run of it
// completes every job.
func TestMaxMinFairnessPackedIsOptimalAndPacks(t *testing.T) {
	data, err := Load(tracedir.Gavel(t))
	if err != nil {
		t.Fatal(err)
	}
	checked := checkOptima(t)
	paired := 0
	for seed := range uint64(10) {
		gen := NewGenerator(data, seed, 0, false)
		v := &View{Now: 0, Counts: [numTypes]int{K80: 1, P100: 1, V100: 1}, data: data}
		for range 6 {
			j := gen.Next()
			jv := JobView{ID: j.ID, Template: j.Template, Scale: j.Scale, Remaining: j.TotalSteps}
			for w := range numTypes {
				jv.Rates[w] = data.alone[w][j.Template][scaleIndex(j.Scale)]
			}
			v.Jobs = append(v.Jobs, jv)
		}
		x := maxMinFairnessPacked{}.Allocate(v)
		if err := withinPackedLimits(v, x); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for id, a := range x {
			if id.IsPair() && a[K80]+a[P100]+a[V100] > 1e-9 {
				paired++
				break
			}
		}
	}
	if paired == 0 {
		t.Fatal("no view's optimum gave a pair any time: the program does not pack")
	}
	res, err := Run(context.Background(), data, Config{Policy: "max_min_fairness_packed", Counts: [numTypes]int{K80: 2, P100: 2, V100: 2}, WindowEnd: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range res.Jobs {
		if math.IsNaN(j.JCT) {
			t.Fatalf("job %d did not complete", j.ID)
		}
	}
	t.Logf("%d programs checked; %d of 10 views packed; the static run's average JCT %.0f s", *checked, paired, res.AverageJCT)
}

// TestAlikeJobsAreSolvedAsOneGroup: on views of the Gavel workload with
// many jobs of few kinds (up to 40 jobs of 3 templates at scale factors
// 1 and 2), every level program — max-min fairness agnostic and
// heterogeneity-aware, makespan, finish-time fairness — solved with alike
// jobs grouped reaches the level the full program, job by job, reaches
// (to 1e-9 relative), its solution keeps every row of the full program,
// and alike jobs get the same time; and the grouped program is smaller.
func TestAlikeJobsAreSolvedAsOneGroup(t *testing.T) {
	data, err := Load(tracedir.Gavel(t))
	if err != nil {
		t.Fatal(err)
	}
	levels := map[string]func(s lpJobs) ([]float64, float64, error){
		"max_min_fairness": func(s lpJobs) ([]float64, float64, error) {
			return s.maxMin(func(i, _ int) float64 { return float64(s.v.Jobs[i].Scale) })
		},
		"max_min_fairness_perf": func(s lpJobs) ([]float64, float64, error) {
			return s.maxMin(func(i, w int) float64 { return s.rate(i, w) * float64(s.v.Jobs[i].Scale) / s.v.Jobs[i].Rates[V100] })
		},
		"min_total_duration": func(s lpJobs) ([]float64, float64, error) { return s.minTotalDuration() },
	}
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 41))
		v := &View{Now: 0, Counts: [numTypes]int{K80: 1 + rng.IntN(12), P100: rng.IntN(12), V100: 1 + rng.IntN(12)}, data: data}
		templates := []int{rng.IntN(len(data.Templates)), rng.IntN(len(data.Templates)), rng.IntN(len(data.Templates))}
		for id := range 1 + rng.IntN(40) {
			tpl := templates[rng.IntN(len(templates))]
			scale := 1
			if data.Templates[tpl].Distributed && rng.IntN(3) == 0 {
				scale = 2
			}
			jv := JobView{ID: id, Template: tpl, Scale: scale, Remaining: 1000}
			for w := range numTypes {
				jv.Rates[w] = data.alone[w][tpl][scaleIndex(scale)]
			}
			if jv.Rates[V100] <= 0 {
				continue
			}
			v.Jobs = append(v.Jobs, jv)
		}
		for name, solve := range levels {
			s := newLPJobs(v)
			var sizes []int
			verifySolution = func(p *program, _ []float64, _ float64) { sizes = append(sizes, len(p.objective)) }
			x, grouped, err := solve(s)
			if err != nil {
				t.Fatalf("seed %d, %s grouped: %v", seed, name, err)
			}
			ungroupedLevelPrograms = true
			_, full, err := solve(s)
			ungroupedLevelPrograms = false
			verifySolution = nil
			if err != nil {
				t.Fatalf("seed %d, %s full: %v", seed, name, err)
			}
			if math.Abs(grouped-full) > 1e-9*max(1, math.Abs(full)) {
				t.Fatalf("seed %d, %s: grouped level %v, full program's %v", seed, name, grouped, full)
			}
			if err := withinLimits(v, s.allocation(x)); err != nil {
				t.Fatalf("seed %d, %s: %v", seed, name, err)
			}
			if len(v.Jobs) > 3*2 && sizes[0] >= sizes[1] {
				t.Fatalf("seed %d, %s: grouped program of %d variables, the full one of %d", seed, name, sizes[0], sizes[1])
			}
			for i, a := range v.Jobs {
				for k, b := range v.Jobs {
					if a.Template == b.Template && a.Scale == b.Scale {
						for t2 := range s.types {
							if x[s.x(i, t2)] != x[s.x(k, t2)] {
								t.Fatalf("seed %d, %s: jobs %d and %d are alike but get %v and %v", seed, name, a.ID, b.ID, x[s.x(i, t2)], x[s.x(k, t2)])
							}
						}
					}
				}
			}
		}
	}
}

// TestADegenerateProgramIsSolved: the packed max-min program on which
// gonum's simplex, started from the slack basis, reports a singular
// basis (26 jobs of a continuous 8:8:8 run, lam 2400 s, seed 2, at
// 856,788 s; kept in testdata) is solved.
func TestADegenerateProgramIsSolved(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "packed-singular-slack-basis.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		J int     `json:"j"`
		V float64 `json:"v"`
	}
	var stored struct {
		Vars      int     `json:"vars"`
		Objective []entry `json:"objective"`
		Rows      []struct {
			Bound float64 `json:"bound"`
			Coef  []entry `json:"coef"`
		} `json:"rows"`
	}
	if err := json.NewDecoder(z).Decode(&stored); err != nil {
		t.Fatal(err)
	}
	p := &program{objective: make([]float64, stored.Vars)}
	for _, e := range stored.Objective {
		p.objective[e.J] = e.V
	}
	for _, r := range stored.Rows {
		row := make([]float64, stored.Vars)
		for _, e := range r.Coef {
			row[e.J] = e.V
		}
		p.rows = append(p.rows, row) // as stored: already scaled
		p.bounds = append(p.bounds, r.Bound)
	}
	x, value, err := p.solve()
	if err != nil {
		t.Fatalf("%d rows × %d variables: %v", len(p.rows), stored.Vars, err)
	}
	// Its dual is too large for gonum's first phase in a test (see
	// TestLPPoliciesFindTheOptimum for optimality on smaller programs):
	// the solution is checked to keep every row and to reach a level.
	for i, r := range p.rows {
		lhs := 0.0
		for j, c := range r {
			lhs += c * x[j]
		}
		if lhs > p.bounds[i]+1e-9*max(1, p.bounds[i]) {
			t.Fatalf("row %d is %v, over its bound %v", i, lhs, p.bounds[i])
		}
	}
	if value <= 0 {
		t.Fatalf("level %v: the program's optimum is positive (x = 0 is not optimal)", value)
	}
}
