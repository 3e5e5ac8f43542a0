package gavel

import "fmt"

// maxMinFairnessPacked is heterogeneity- and packing-aware max-min
// fairness (§4.1 with §3.1's space sharing; the reference's
// MaxMinFairness_Packing, whose name puts the round mechanism in packing
// mode: every pair of active jobs of one scale factor is a candidate,
// and the allocation gives time to pairs as well as to single jobs).
//
// Its program, over x[c][w] — the time combination c (a job alone, or a
// pair packed on the same GPUs) should have on type w:
//
//	maximise L
//	subject to  L ≤ Σ_{c ∋ i} Σ_w (T_i(c, w) / Σ_w' T_i(w')) · scale_c · x[c][w]   for each job i
//	            Σ_{c ∋ i} Σ_w x[c][w] ≤ 1                                      for each job i
//	            Σ_c scale_c · x[c][w] ≤ N_w                                    for each type w
//	            x ≥ 0
//
// T_i(c, w) is job i's steps/s in combination c on w (alone, or its part
// of the pair's packed rates), normalised by the sum of its rates alone
// over the cluster's types, as the reference normalises; a pair's
// GPUs count once. A combination gets a variable on a type only where
// every member runs there (a positive rate): time on a type where a
// member makes no progress is no one's gain.
type maxMinFairnessPacked struct{}

// Name is the reference's name.
func (maxMinFairnessPacked) Name() string { return "MaxMinFairness_Packing" }

// packedVar is one variable of the packed program: combination id on
// type w, with each member's (view index) normalised rate there.
type packedVar struct {
	id      ID
	w       int
	members [2]int
	coef    [2]float64
	scale   int
}

// Allocate solves the program.
func (p maxMinFairnessPacked) Allocate(v *View) Allocation {
	if len(v.Jobs) == 0 {
		return Allocation{}
	}
	s := newLPJobs(v)
	norm := make([]float64, len(v.Jobs))
	for i, j := range v.Jobs {
		for _, w := range s.types {
			norm[i] += j.Rates[w]
		}
	}
	var vars []packedVar
	add := func(id ID, w, a, b int, rates [2]float64, scale int) {
		c := packedVar{id: id, w: w, members: [2]int{a, b}, scale: scale}
		for m, i := range c.members {
			if i >= 0 && norm[i] > 0 {
				c.coef[m] = rates[m] / norm[i]
			}
		}
		vars = append(vars, c)
	}
	for i, j := range v.Jobs {
		for _, w := range s.types {
			if j.Rates[w] > 0 {
				add(Single(j.ID), w, i, -1, [2]float64{j.Rates[w], 0}, j.Scale)
			}
		}
	}
	for i, a := range v.Jobs {
		for k := i + 1; k < len(v.Jobs); k++ {
			b := v.Jobs[k]
			if a.Scale != b.Scale {
				continue
			}
			for _, w := range s.types {
				if r := v.Packed(a, b, w); r[0] > 0 && r[1] > 0 {
					add(Pair(a.ID, b.ID), w, i, k, r, a.Scale)
				}
			}
		}
	}
	n := len(vars) + 1
	level := n - 1
	prog := newProgram(n)
	prog.objective[level] = 1
	for i := range v.Jobs {
		gain := make([]float64, n)
		time := make([]float64, n)
		gain[level] = 1
		for k, c := range vars {
			for m, member := range c.members {
				if member == i {
					gain[k] = -c.coef[m] * float64(c.scale)
					time[k] = 1
				}
			}
		}
		prog.row(gain, 0)
		prog.row(time, 1)
	}
	for _, w := range s.types {
		r := make([]float64, n)
		for k, c := range vars {
			if c.w == w {
				r[k] = float64(c.scale)
			}
		}
		prog.row(r, float64(v.Counts[w]))
	}
	x, _, err := prog.solve()
	if err != nil {
		panic(fmt.Sprintf("gavel: %s at %v s with %d jobs: %v", p.Name(), v.Now, len(v.Jobs), err))
	}
	out := Allocation{}
	for k, c := range vars {
		a := out[c.id]
		a[c.w] = min(1, max(0, x[k]))
		out[c.id] = a
	}
	for _, j := range v.Jobs {
		if _, ok := out[Single(j.ID)]; !ok {
			out[Single(j.ID)] = [numTypes]float64{} // in the allocation, with no time
		}
	}
	return out
}
