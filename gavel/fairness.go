package gavel

import "math"

// Rho is each measured job's finish-time fairness ρ (Themis's): its JCT
// under res over its JCT under base, the same trace (same seed, arrivals
// and jobs) under Isolated — every job an equal share of every type, the
// cluster's "fair share". ρ > 1: the job finished later than its fair
// share would have let it. Jobs unfinished in either run are left out.
func Rho(res, base *Result) map[int]float64 {
	isolated := map[int]float64{}
	for _, j := range base.Jobs {
		if j.InWindow && !math.IsNaN(j.JCT) {
			isolated[j.ID] = j.JCT
		}
	}
	out := map[int]float64{}
	for _, j := range res.Jobs {
		if b, ok := isolated[j.ID]; ok && j.InWindow && !math.IsNaN(j.JCT) && b > 0 {
			out[j.ID] = j.JCT / b
		}
	}
	return out
}

// WindowJCTs are the JCTs of the measured jobs that completed.
func (r *Result) WindowJCTs() []float64 {
	var out []float64
	for _, j := range r.Jobs {
		if j.InWindow && !math.IsNaN(j.JCT) {
			out = append(out, j.JCT)
		}
	}
	return out
}
