package pollux

import (
	"fmt"
	"maps"
	"slices"
)

// The reference answers a query on five or more nodes by scipy's linear
// interpolation over a 3-D Delaunay triangulation of (nodes, replicas,
// local batch) (MODEL.md §3.4), a triangulation of a degenerate grid that
// only Qhull's own choices fix. Appendix B tabulates every such query of
// the published Tiresias and Optimus runs; any other query (other
// workloads, other cluster sizes, Pollux's elastic shapes) is answered
// here by a piecewise-linear interpolation over the same points that does
// not depend on a triangulation, and counted as approximate: its values
// can differ from the reference's (MODEL.md: another valid triangulation
// changes values by up to ~99 %).

// pathBPoints is the point set of §3.4: the placements.csv rows grouped by
// (nodes, replicas, local batch) with their step and sync times averaged,
// then scalability.csv's rows (averaged with any group of the same triple),
// by node count, then replica count, each sorted by local batch.
type pathBPoints map[int]map[int][]stepRow

// addPoint accumulates one measured row into sums (by triple: step, sync,
// rows).
func addPoint(sums map[[3]int]*[3]float64, nodes, replicas int, r stepRow) {
	k := [3]int{nodes, replicas, r.local}
	s := sums[k]
	if s == nil {
		s = &[3]float64{}
		sums[k] = s
	}
	s[0] += r.step
	s[1] += r.syncTime
	s[2]++
}

// buildPathB turns the accumulated sums into the sorted point set.
func buildPathB(sums map[[3]int]*[3]float64) pathBPoints {
	g := pathBPoints{}
	for k, s := range sums {
		if g[k[0]] == nil {
			g[k[0]] = map[int][]stepRow{}
		}
		g[k[0]][k[1]] = append(g[k[0]][k[1]], stepRow{local: k[2], step: s[0] / s[2], syncTime: s[1] / s[2]})
	}
	for _, byReplicas := range g {
		for r, rows := range byReplicas {
			slices.SortFunc(rows, func(x, y stepRow) int { return x.local - y.local })
			byReplicas[r] = rows
		}
	}
	return g
}

// approximate answers a query (nodes clipped at 16, replicas, local batch
// a) from the point set: keeping the replicas per node (replicas/nodes)
// fixed, the value at the measured node counts around nodes, linear in the
// node count between them; at each node count, linear in the replica
// count between the measured counts around it; at each replica count,
// linear in the local batch between its measured rows. Outside the
// measured range of any axis the nearest measured value is taken.
func (g pathBPoints) approximate(nodes, replicas, a int) (Step, error) {
	if len(g) == 0 {
		return Step{}, fmt.Errorf("no measured placements to interpolate from")
	}
	n := float64(min(nodes, 16))
	perNode := float64(replicas) / n
	levels := slices.Sorted(maps.Keys(g))
	lo, hi, w := bracket(levels, n)
	x := g.atNodes(levels[lo], perNode*float64(levels[lo]), a)
	if hi == lo {
		return x, nil
	}
	y := g.atNodes(levels[hi], perNode*float64(levels[hi]), a)
	return mix(x, y, w), nil
}

// atNodes is the value at a measured node count for replicas r (not
// necessarily whole) and local batch a.
func (g pathBPoints) atNodes(nodes int, r float64, a int) Step {
	byReplicas := g[nodes]
	counts := slices.Sorted(maps.Keys(byReplicas))
	lo, hi, w := bracket(counts, r)
	x := atLocal(byReplicas[counts[lo]], a)
	if hi == lo {
		return x
	}
	return mix(x, atLocal(byReplicas[counts[hi]], a), w)
}

// atLocal is linear in the local batch between the rows around a, the
// first or last row outside them.
func atLocal(rows []stepRow, a int) Step {
	locals := make([]int, len(rows))
	for i, r := range rows {
		locals[i] = r.local
	}
	lo, hi, w := bracket(locals, float64(a))
	x := Step{rows[lo].step, rows[lo].syncTime}
	if hi == lo {
		return x
	}
	return mix(x, Step{rows[hi].step, rows[hi].syncTime}, w)
}

// bracket finds the sorted values around v: the indices below and above
// and v's weight toward the upper one (lo == hi when v is on a value or
// outside the range).
func bracket(sorted []int, v float64) (lo, hi int, w float64) {
	i, _ := slices.BinarySearchFunc(sorted, v, func(x int, v float64) int {
		switch {
		case float64(x) < v:
			return -1
		case float64(x) > v:
			return 1
		}
		return 0
	})
	switch {
	case i == len(sorted):
		return i - 1, i - 1, 0
	case float64(sorted[i]) == v || i == 0:
		return i, i, 0
	}
	return i - 1, i, (v - float64(sorted[i-1])) / float64(sorted[i]-sorted[i-1])
}

// mix is (1−w)·x + w·y.
func mix(x, y Step, w float64) Step {
	return Step{Step: (1-w)*x.Step + w*y.Step, Sync: (1-w)*x.Sync + w*y.Sync}
}

// WithoutAppendixB is m with every Path-B query interpolated (pathb.go),
// as for a workload Appendix B was not written for: what the published
// runs come to without the table says how far an approximate run can be
// from the reference.
func (m *Model) WithoutAppendixB() *Model {
	out := &Model{Apps: map[string]*App{}, Dir: m.Dir}
	for name, app := range m.Apps {
		c := *app
		c.pathB = nil
		out.Apps[name] = &c
	}
	return out
}
