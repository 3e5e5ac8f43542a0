package gavel

import "github.com/gpusched/gpusched/internal/pyrand"

// gandiva is the Gandiva policy (§7.4): when the jobs ask for more GPUs
// than the cluster has, jobs not yet combined are paired at random (same
// scale factor), and every combination — pair or single — gets an equal
// share of every type; pairs that pack badly are split at the next call.
type gandiva struct {
	rng *pyrand.Rand
	// combined is each job's combination and partner (-1: none), in the
	// order the reference's dict keeps them.
	combined []combination
}

// combination is one job's entry in Gandiva's memory.
type combination struct {
	job, partner int
	id           ID
}

// newGandiva is Gandiva with its generator seeded seed.
func newGandiva(seed uint64) *gandiva { return &gandiva{rng: pyrand.New(seed)} }

// Name is the reference's name, Gandiva_Packing: the mechanism packs.
func (*gandiva) Name() string { return "Gandiva_Packing" }

// Allocate splits the cluster equally over the combinations.
func (g *gandiva) Allocate(v *View) Allocation {
	jobs := map[int]JobView{}
	for _, j := range v.Jobs {
		jobs[j.ID] = j
	}
	// Clean-up: a combination whose job or partner is gone, or that packs
	// to less than one job's worth of throughput, is forgotten.
	drop := map[int]bool{}
	for _, c := range g.combined {
		_, here := jobs[c.job]
		_, partnerHere := jobs[c.partner]
		if !here || (c.partner >= 0 && !partnerHere) || g.normalised(v, jobs, c.id) < 1.0 {
			drop[c.job] = true
			if c.partner >= 0 {
				drop[c.partner] = true
			}
		}
	}
	kept := g.combined[:0]
	for _, c := range g.combined {
		if !drop[c.job] {
			kept = append(kept, c)
		}
	}
	g.combined = kept

	out := Allocation{}
	// Every id the mechanism knows is in the output, at 0 unless chosen.
	for i, a := range v.Jobs {
		out[Single(a.ID)] = [numTypes]float64{}
		for _, b := range v.Jobs[:i] {
			if a.Scale == b.Scale {
				out[Pair(a.ID, b.ID)] = [numTypes]float64{}
			}
		}
	}
	requested, available := 0, 0
	for _, j := range v.Jobs {
		requested += j.Scale
	}
	for _, c := range v.Counts {
		available += c
	}
	var chosen []ID
	if requested <= available {
		for _, j := range v.Jobs {
			chosen = append(chosen, Single(j.ID))
		}
	} else {
		inMemory := map[int]bool{}
		for _, c := range g.combined {
			inMemory[c.job] = true
		}
		var open []int
		for _, j := range v.Jobs {
			if !inMemory[j.ID] {
				open = append(open, j.ID)
			}
		}
		for tries := len(open); len(open) > 1 && tries > 0; tries-- {
			pick := g.rng.Sample2(len(open))
			j1, j2 := open[pick[0]], open[pick[1]]
			if jobs[j1].Scale != jobs[j2].Scale {
				continue
			}
			open = remove(remove(open, j1), j2)
			id := Pair(j1, j2)
			g.combined = append(g.combined, combination{j1, j2, id}, combination{j2, j1, id})
		}
		for _, j := range open {
			g.combined = append(g.combined, combination{j, -1, Single(j)})
		}
		seen := map[ID]bool{}
		for _, c := range g.combined {
			if !seen[c.id] {
				seen[c.id] = true
				chosen = append(chosen, c.id)
			}
		}
	}
	for _, id := range chosen {
		out[id] = isolatedShares(v.Counts, len(chosen), jobs[id.A].Scale)
	}
	return out
}

// normalised is a combination's packed throughput over its members'
// alone throughputs, summed over the types and members in the
// reference's order (k80, p100, v100; the cluster's types only); 0 for a single, and 0 when a
// member cannot run packed on some type.
func (g *gandiva) normalised(v *View, jobs map[int]JobView, id ID) float64 {
	if !id.IsPair() {
		return 0
	}
	a, b := jobs[id.A], jobs[id.B]
	sum := 0.0
	for w := range numTypes {
		if v.Counts[w] == 0 {
			continue
		}
		packed := v.Packed(a, b, w)
		for i, m := range []JobView{a, b} {
			if packed[i] <= 0 {
				return 0
			}
			sum += packed[i] / m.Rates[w]
		}
	}
	return sum
}

// remove is list without its first x.
func remove(list []int, x int) []int {
	for i, y := range list {
		if y == x {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}
