package gavel

import (
	"slices"

	"github.com/gpusched/gpusched/internal/pyrand"
)

// fifo is the FIFO policy (§7.1): each job, in arrival order, is given one
// worker type for life. The reference draws a type at random among those
// with room but then gives the job the alphabetically last type with any
// room left (its loop variable outlives the loop), and removes the drawn
// type from the list when the given one fills: the quirk is copied, since
// the published runs were made with it.
type fifo struct {
	rng *pyrand.Rand
	// given is each allocated job's type, kept across calls.
	given map[int]int
}

// newFIFO is FIFO with its generator seeded seed.
func newFIFO(seed uint64) *fifo { return &fifo{rng: pyrand.New(seed), given: map[int]int{}} }

// Name is the reference's name, FIFO.
func (*fifo) Name() string { return "FIFO" }

// Allocate keeps every running job's type, gives a finished job's type to
// the queue's head, then types to the queue in order.
func (f *fifo) Allocate(v *View) Allocation {
	avail := v.Counts
	jobs := map[int]JobView{}
	var queue []int
	for _, j := range v.Jobs {
		jobs[j.ID] = j
		if _, ok := f.given[j.ID]; !ok {
			queue = append(queue, j.ID)
		}
	}
	keys := make([]int, 0, len(f.given))
	for k := range f.given {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		wk := f.given[k]
		if _, active := jobs[k]; active {
			avail[wk] -= jobs[k].Scale
			continue
		}
		if len(queue) > 0 {
			h := jobs[queue[0]]
			if h.Scale <= avail[wk] && h.Rates[wk] > 0 {
				queue = queue[1:]
				f.given[h.ID] = wk
				avail[wk] -= h.Scale
			}
		}
		delete(f.given, k)
	}
	var types []int
	for w := range numTypes {
		if avail[w] > 0 {
			types = append(types, w)
		}
	}
	for len(queue) > 0 && len(types) > 0 {
		h := jobs[queue[0]]
		queue = queue[1:]
		var fitPos []int
		for i, w := range types {
			if avail[w] >= h.Scale {
				fitPos = append(fitPos, i)
			}
		}
		if len(fitPos) == 0 {
			break
		}
		drawn := f.rng.RandBelow(len(fitPos))
		w := types[len(types)-1] // the quirk: the last type, not the drawn one
		if h.Rates[w] <= 0 {
			continue
		}
		f.given[h.ID] = w
		avail[w] -= h.Scale
		if avail[w] == 0 {
			types = slices.Delete(types, fitPos[drawn], fitPos[drawn]+1)
		}
	}
	out := Allocation{}
	for _, j := range v.Jobs {
		var x [numTypes]float64
		if w, ok := f.given[j.ID]; ok {
			x[w] = 1
		}
		out[Single(j.ID)] = x
	}
	return out
}
