package gavel

import "slices"

// allox is the AlloX policy with α = 1 (§7.3): jobs not already holding a
// whole GPU are matched to the free GPUs by a min-cost assignment whose
// cost for the b-th job on a GPU is b × its processing time there plus its
// waiting time; each GPU runs the job assigned to it last (largest b)
// first. A job keeps its GPU until it completes.
type allox struct {
	// prev is the last allocation, kept across calls.
	prev Allocation
}

// Name is the reference's name, AlloX_Perf: no worker-type shuffle.
func (*allox) Name() string { return "AlloX_Perf" }

// zeroRate stands in for a rate of 0 in the cost (the reference's 1e-10):
// the job would take practically for ever there.
const zeroRate = 1e-10

// Allocate keeps the jobs holding a GPU, and assigns the others to the
// free GPUs.
func (a *allox) Allocate(v *View) Allocation {
	var kept, open []JobView
	for _, j := range v.Jobs {
		if p, ok := a.prev[Single(j.ID)]; ok && (p[K80]+p[P100])+p[V100] == 1.0 {
			kept = append(kept, j)
		} else {
			open = append(open, j)
		}
	}
	// Free GPUs, k80 first: each type's count less the kept jobs on it.
	var slotType []int
	for w := range numTypes {
		free := v.Counts[w]
		for _, j := range kept {
			if a.prev[Single(j.ID)][w] == 1.0 {
				free--
			}
		}
		for range max(free, 0) {
			slotType = append(slotType, w)
		}
	}
	slices.SortStableFunc(open, func(x, y JobView) int {
		kx, ky := -(v.Now - x.Arrival), -(v.Now - y.Arrival)
		switch {
		case kx < ky:
			return -1
		case kx > ky:
			return 1
		}
		return 0
	})
	out := Allocation{}
	for _, j := range v.Jobs {
		out[Single(j.ID)] = [numTypes]float64{}
	}
	n, m := len(slotType), len(open)
	if n > 0 && m > 0 {
		cost := make([][]float64, m)
		for i, j := range open {
			cost[i] = make([]float64, n*m)
			wait := v.Now - j.Arrival
			for s, w := range slotType {
				rate := j.Rates[w]
				if rate == 0 {
					rate = zeroRate
				}
				q := j.Remaining / rate
				for b := 1; b <= m; b++ {
					cost[i][(b-1)*n+s] = float64(b)*q + wait
				}
			}
		}
		if cols, ok := assign(cost, n*m); ok {
			// Per slot, the job with the largest block runs first.
			best := make([]int, n)
			bestBlock := make([]int, n)
			for s := range best {
				best[s], bestBlock[s] = -1, -1
			}
			for i, c := range cols {
				s, b := c%n, c/n
				if b > bestBlock[s] {
					best[s], bestBlock[s] = i, b
				}
			}
			for s, i := range best {
				if i >= 0 {
					x := out[Single(open[i].ID)]
					x[slotType[s]] = 1.0
					out[Single(open[i].ID)] = x
				}
			}
		}
	}
	for _, j := range kept {
		out[Single(j.ID)] = a.prev[Single(j.ID)]
	}
	a.prev = out
	return out
}
