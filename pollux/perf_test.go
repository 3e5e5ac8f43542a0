package pollux

import (
	"cmp"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/diff/fd"
)

// TestPerfGradient: the fit's hand-worked gradient agrees with a finite
// difference of its objective, for every parameter free.
func TestPerfGradient(t *testing.T) {
	obs := []observation{
		{1, 1, 32, 0.05, 0.0005}, {1, 2, 64, 0.09, 0.01}, {2, 4, 128, 0.2, 0.05}, {3, 8, 32, 0.1, 0.04}, {1, 4, 256, 0.4, 0.02},
	}
	f := &perfFit{obs: obs, start: perfStart, free: []int{0, 1, 2, 3, 4, 5, 6}}
	for _, o := range obs {
		f.logAcc = append(f.logAcc, math.Log(o.step-o.sync))
		f.logStep = append(f.logStep, math.Log(o.step))
	}
	x := []float64{-2, -4, -1.5, -3, -2.5, -5, 0.3}
	got := make([]float64, 7)
	f.gradient(got, x)
	want := fd.Gradient(nil, f.value, x, &fd.Settings{Formula: fd.Central, Step: 1e-6})
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-5*(1+math.Abs(want[i])) {
			t.Errorf("d/dx%d: %v, finite difference %v", i, got[i], want[i])
		}
	}
	// And the fit lowers the objective from its start.
	p := FitPerf(obs)
	if v0, v := perfObjective(PerfParams{0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001}, obs), perfObjective(p, obs); v >= v0 {
		t.Errorf("fit %+v: objective %v, at the start %v", p, v, v0)
	}
}

// perfObjective is the fit's objective at p (for tests).
func perfObjective(p PerfParams, obs []observation) float64 {
	f := &perfFit{obs: obs, start: [7]float64{p.AlphaC, p.BetaC, p.AlphaN, p.BetaN, p.AlphaR, p.BetaR, p.Gamma}}
	for _, o := range obs {
		f.logAcc = append(f.logAcc, math.Log(o.step-o.sync))
		f.logStep = append(f.logStep, math.Log(o.step))
	}
	return f.value(nil)
}

// TestFrontsAsByDefinition: the two-objective non-dominated sort puts
// every member in the front the definition does (a member's front is one
// more than the highest front of any member dominating it).
func TestFrontsAsByDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 50 {
		var pop []*individual
		for range 60 {
			// Few distinct values, so ties and equal members are common.
			pop = append(pop, &individual{obj: [2]float64{float64(rng.IntN(8)), float64(rng.IntN(8))}})
		}
		front := map[*individual]int{}
		var r ranker
		for k, f := range r.fronts(pop) {
			for _, ind := range f {
				front[ind] = k
			}
		}
		for _, a := range pop {
			want := 0
			for _, b := range pop {
				if dominates(b, a) {
					want = max(want, front[b]+1)
				}
			}
			if front[a] != want {
				t.Fatalf("trial %d: %v in front %d, want %d", trial, a.obj, front[a], want)
			}
		}
	}
}

// TestWhatNoObservationTellsIsOptimistic: a job seen only on one GPU has
// no network cost in its model (the parameters no observation tells are
// held at their lower bound, 1e-8, as the reference holds them), so
// Pollux's first guess at a wider placement is optimistic; held at their
// starting values instead, Pollux's average JCTs came out 3–6 % longer
// than the published on every workload.
func TestWhatNoObservationTellsIsOptimistic(t *testing.T) {
	p := FitPerf([]observation{{1, 1, 64, 0.06, 0.0005}})
	if p.AlphaR != tiny || p.BetaR != tiny || p.AlphaN > 1.1*tiny+1e-20 || p.BetaN > 1.1*tiny+1e-20 {
		t.Fatalf("network parameters of a one-GPU model: %+v, want 1e-8 (and 1.1e-8 across nodes)", p)
	}
	if p.AlphaC != (0.06-0.0005)/2 {
		t.Fatalf("αc of one atomic batch size: %v, want half the mean compute time", p.AlphaC)
	}
}

// TestCrowdingAsAStableSortGivesIt: the ranker's sorts order ties by
// position, so its crowding distances equal those of the plain rule (two
// stable sorts of the distinct members, pymoo's): the search's outcome
// depends on the order of equals, and a run's result on the search's.
func TestCrowdingAsAStableSortGivesIt(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	var r ranker
	for trial := range 200 {
		var front, copies []*individual
		for range 2 + rng.IntN(40) {
			// Few distinct values: ties and repeated members are common.
			obj := [2]float64{float64(rng.IntN(6)), float64(rng.IntN(6))}
			front = append(front, &individual{obj: obj})
			copies = append(copies, &individual{obj: obj})
		}
		r.crowd(front)
		stableCrowd(copies)
		for i := range front {
			if front[i].crowding != copies[i].crowding {
				t.Fatalf("trial %d: member %d %v has crowding %v, the stable rule gives %v", trial, i, front[i].obj, front[i].crowding, copies[i].crowding)
			}
		}
	}
}

// TestCrowdingOfRealFrontsAsAStableSortGivesIt: on fronts as fronts makes
// them (ordered by objective 1, then 2), crowd takes a shorter way — no
// sort, repeats found next to each other — and must still give what the
// stable rule gives.
func TestCrowdingOfRealFrontsAsAStableSortGivesIt(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	var r, fr ranker
	shortWays := 0
	for trial := range 200 {
		var pop []*individual
		for range 2 + rng.IntN(80) {
			// Few distinct values: ties and repeated members are common.
			pop = append(pop, &individual{obj: [2]float64{float64(rng.IntN(12)), float64(rng.IntN(12))}})
		}
		for k, front := range fr.fronts(pop) {
			copies := make([]*individual, len(front))
			for i, ind := range front {
				copies[i] = &individual{obj: ind.obj}
			}
			if _, monotone := r.distinct(front); monotone {
				shortWays++
			}
			r.crowd(front)
			stableCrowd(copies)
			for i := range front {
				if front[i].crowding != copies[i].crowding {
					t.Fatalf("trial %d, front %d: member %d %v has crowding %v, the stable rule gives %v", trial, k, i, front[i].obj, front[i].crowding, copies[i].crowding)
				}
			}
		}
	}
	if shortWays == 0 {
		t.Fatal("no front took the short way: the test tests nothing new")
	}
}

// TestObjectiveKeysSortAsTheFloatsDo: fronts' integer keys and its own
// sort give the order of a sort by cmp.Compare over the objectives, then
// position — NaN first, −0 equal to +0, ties common.
func TestObjectiveKeysSortAsTheFloatsDo(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 17))
	values := []float64{math.NaN(), math.Inf(-1), -2.5, -1, -1e-300, math.Copysign(0, -1), 0, 1e-300, 0.5, 1, 3, math.Inf(1)}
	for trial := range 300 {
		var keys []objKeys
		var want []ranked
		for i := range rng.IntN(300) {
			ind := &individual{obj: [2]float64{values[rng.IntN(len(values))], values[rng.IntN(len(values))]}}
			keys = append(keys, objKeys{k0: objKey(ind.obj[0]), k1: objKey(ind.obj[1]), at: i, ind: ind})
			want = append(want, ranked{ind, i})
		}
		sortObjKeys(keys)
		slices.SortFunc(want, func(a, b ranked) int {
			return cmp.Or(cmp.Compare(a.ind.obj[0], b.ind.obj[0]), cmp.Compare(a.ind.obj[1], b.ind.obj[1]), cmp.Compare(a.at, b.at))
		})
		for i := range want {
			if keys[i].ind != want[i].ind {
				t.Fatalf("trial %d: at %d the sort has %v (position %d), cmp.Compare's order %v (position %d)", trial, i, keys[i].ind.obj, keys[i].at, want[i].ind.obj, want[i].at)
			}
		}
	}
}

// stableCrowd is the crowding rule as stable sorts state it.
func stableCrowd(front []*individual) {
	seen := map[[2]float64]bool{}
	var unique []*individual
	for _, ind := range front {
		ind.crowding = 0
		if !seen[ind.obj] {
			seen[ind.obj] = true
			unique = append(unique, ind)
		}
	}
	if len(unique) <= 2 {
		for _, ind := range unique {
			ind.crowding = math.Inf(1)
		}
		return
	}
	for m := range 2 {
		slices.SortStableFunc(unique, func(a, b *individual) int { return cmp.Compare(a.obj[m], b.obj[m]) })
		lo, hi := unique[0].obj[m], unique[len(unique)-1].obj[m]
		unique[0].crowding, unique[len(unique)-1].crowding = math.Inf(1), math.Inf(1)
		if hi == lo {
			continue
		}
		for i := 1; i < len(unique)-1; i++ {
			unique[i].crowding += (unique[i+1].obj[m] - unique[i-1].obj[m]) / (hi - lo)
		}
	}
}

// TestAGenomeSetTellsAllocationsByContent: the offspring's duplicate check
// finds an allocation seen before, and not one that only shares its hash
// with another (a collision, made here by hand).
func TestAGenomeSetTellsAllocationsByContent(t *testing.T) {
	var g genomeSet
	g.reset()
	a, b := genome{1, 0, 2}, genome{0, 3, 0}
	if !g.add(a) || g.add(genome{1, 0, 2}) {
		t.Fatal("an allocation added twice was new both times, or never")
	}
	// b's hash slot taken by another allocation: b is still new, once.
	g.first[maphash.Bytes(g.seed, b)] = genome{9, 9, 9}
	if !g.add(b) || g.add(slices.Clone(b)) {
		t.Fatal("an allocation whose hash another holds was not told apart")
	}
	g.reset()
	if !g.add(a) {
		t.Fatal("reset kept an allocation")
	}
}

// TestAFitRememberedIsTheFitItself: the memo answers a profile it has seen
// with the very fit (every bit), tells profiles apart by every field and
// by their order, and holds at most its size.
func TestAFitRememberedIsTheFitItself(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var profiles [][]observation
	for range 12 {
		var obs []observation
		for range 1 + rng.IntN(5) {
			step := 0.02 + rng.Float64()
			obs = append(obs, observation{1 + rng.IntN(3), 1 + rng.IntN(8), 32 << rng.IntN(4), step, step * rng.Float64() / 2})
		}
		profiles = append(profiles, obs)
	}
	// The same profile in another order, and with one bit of a time changed.
	swapped := slices.Clone(profiles[0])
	swapped = append(swapped, observation{2, 4, 64, 0.3, 0.05})
	reordered := slices.Clone(swapped)
	reordered[0], reordered[len(reordered)-1] = reordered[len(reordered)-1], reordered[0]
	nudged := slices.Clone(swapped)
	nudged[0].sync = math.Nextafter(nudged[0].sync, 1)
	profiles = append(profiles, swapped, reordered, nudged)
	m := newFitMemo(8)
	for round := range 2 {
		for i, obs := range profiles {
			if got, want := m.fit(obs), fitPerf(obs); got != want {
				t.Fatalf("round %d, profile %d: remembered %+v, fitted %+v", round, i, got, want)
			}
			if got, again := m.fit(obs), m.fit(slices.Clone(obs)); got != again {
				t.Fatalf("profile %d: %+v, then %+v", i, got, again)
			}
			if n := m.cache.Len(); n > 8 {
				t.Fatalf("the memo holds %d fits; 8 at most", n)
			}
		}
	}
	if profileKey(swapped) == profileKey(reordered) || profileKey(swapped) == profileKey(nudged) {
		t.Error("a reordered or nudged profile has its original's key")
	}
	// Each profile missed once per round (15 > 8, so the second round
	// found each one forgotten) and was then found twice.
	if misses, hits := m.misses.Load(), m.hits.Load(); misses != int64(2*len(profiles)) || hits != int64(4*len(profiles)) {
		t.Errorf("%d misses and %d hits; want %d and %d", misses, hits, 2*len(profiles), 4*len(profiles))
	}
}
