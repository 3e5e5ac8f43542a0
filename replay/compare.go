package replay

import (
	"math"
	"slices"
)

// Tolerance is how far a point may be from the published one and still
// match: the published files round to 0.01.
const Tolerance = 0.01 + 1e-9

// SeedMatch compares one run with its published curve.
type SeedMatch struct {
	Seed int64
	// Matched is how many of the 131 points match on all three measures.
	Matched int
	// FirstDiff is the first arrived % that does not match (-1: none).
	FirstDiff int
	// MaxDiff is the largest difference over points and measures.
	MaxDiff float64
	// Missing is set when no published curve exists for the run.
	Missing bool
}

// MatchCurve compares ours with a published curve point by point.
func MatchCurve(ours, published []Point) SeedMatch {
	m := SeedMatch{FirstDiff: -1}
	for k := 0; k < len(ours) && k < len(published); k++ {
		d := math.Max(math.Abs(ours[k].Alloc-published[k].Alloc),
			math.Max(math.Abs(ours[k].Frag-published[k].Frag), math.Abs(ours[k].FragRatio-published[k].FragRatio)))
		if d <= Tolerance {
			m.Matched++
		} else if m.FirstDiff < 0 {
			m.FirstDiff = k
		}
		m.MaxDiff = math.Max(m.MaxDiff, d)
	}
	return m
}

// MeanCurve is the pointwise mean of curves.
func MeanCurve(curves [][]Point) []Point {
	if len(curves) == 0 {
		return nil
	}
	out := make([]Point, len(curves[0]))
	for k := range out {
		out[k].Arrived = k
		for _, c := range curves {
			out[k].Alloc += c[k].Alloc
			out[k].Frag += c[k].Frag
			out[k].FragRatio += c[k].FragRatio
		}
		n := float64(len(curves))
		out[k].Alloc /= n
		out[k].Frag /= n
		out[k].FragRatio /= n
	}
	return out
}

// MeanDiff is the largest pointwise difference between two mean curves:
// allocation, fragmentation amount and ratio, in percentage points.
func MeanDiff(ours, published []Point) (alloc, frag, ratio float64) {
	for k := 0; k < len(ours) && k < len(published); k++ {
		alloc = math.Max(alloc, math.Abs(ours[k].Alloc-published[k].Alloc))
		frag = math.Max(frag, math.Abs(ours[k].Frag-published[k].Frag))
		ratio = math.Max(ratio, math.Abs(ours[k].FragRatio-published[k].FragRatio))
	}
	return
}

// SummaryPoints are the arrived % the published summary reports.
var SummaryPoints = []int{50, 70, 80, 90, 100, 110, 120, 130}

// Comparison is one workload and policy of a matrix against the published results.
type Comparison struct {
	Workload, Policy string
	Seeds            []SeedMatch
	// Ours and Theirs are the mean curves over the seeds compared.
	Ours, Theirs []Point
	// MaxAlloc, MaxFrag and MaxRatio are the largest differences of the means.
	MaxAlloc, MaxFrag, MaxRatio float64
}

// Compare matches every run of one workload and policy with the published
// curves; runs maps seed to our curve.
func Compare(pub Published, workload, policy string, runs map[int64][]Point) Comparison {
	c := Comparison{Workload: workload, Policy: policy}
	seeds := make([]int64, 0, len(runs))
	for s := range runs {
		seeds = append(seeds, s)
	}
	slices.Sort(seeds)
	var ours, theirs [][]Point
	for _, s := range seeds {
		want, ok := pub[RunKey{Workload: workload, Policy: policy, Seed: s}]
		if !ok {
			c.Seeds = append(c.Seeds, SeedMatch{Seed: s, Missing: true, FirstDiff: -1})
			continue
		}
		sm := MatchCurve(runs[s], want)
		sm.Seed = s
		c.Seeds = append(c.Seeds, sm)
		ours = append(ours, runs[s])
		theirs = append(theirs, want)
	}
	c.Ours, c.Theirs = MeanCurve(ours), MeanCurve(theirs)
	c.MaxAlloc, c.MaxFrag, c.MaxRatio = MeanDiff(c.Ours, c.Theirs)
	return c
}
