package pal

import (
	"cmp"
	"slices"

	"github.com/gpusched/gpusched/internal/pyrand"
)

// topology is the cluster's layout: GPU g is on node g / perNode.
type topology struct{ perNode int }

func (t topology) node(g int) int { return g / t.perNode }

// pmFirst is PM-First's chooser (§5.3): the free GPUs sorted by slowdown
// factor, then by how well the count of same-factor free GPUs on their
// node matches n (|count − n|, "best-match locality"), then by id; the
// first n.
func pmFirst(top topology, sf []float64, free []int, n int) []int {
	if len(free) < n {
		return nil
	}
	score := make(map[int]int, len(free))
	for _, g := range free {
		count := 0
		for _, h := range free {
			if top.node(h) == top.node(g) && sf[h] == sf[g] {
				count++
			}
		}
		score[g] = abs(count - n)
	}
	sorted := slices.Clone(free)
	slices.SortStableFunc(sorted, func(a, b int) int {
		return cmp.Or(cmp.Compare(sf[a], sf[b]), cmp.Compare(score[a], score[b]), cmp.Compare(a, b))
	})
	return sorted[:n]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// palEntry is one step of PAL's walk for a class (§5.4): GPUs up to
// slowdown factor threshold, within one node or across nodes, at cost
// threshold × (1 within, the locality penalty across).
type palEntry struct {
	threshold float64
	across    bool
	cost      float64
}

// palEntries is PAL's ordered list for a class: two entries per distinct
// factor (in order of first appearance by GPU id, within before across),
// sorted stably by cost.
func palEntries(sf []float64, locality float64) []palEntry {
	var seen []float64
	var out []palEntry
	for _, s := range sf {
		if slices.Contains(seen, s) {
			continue
		}
		seen = append(seen, s)
		out = append(out, palEntry{s, false, s * 1.0}, palEntry{s, true, s * locality})
	}
	slices.SortStableFunc(out, func(a, b palEntry) int { return cmp.Compare(a.cost, b.cost) })
	return out
}

// palChoose is PAL's chooser (§5.4). A job of one GPU, or of more GPUs
// than a node has, is placed as PM-First places it; otherwise the walk
// over the class's entries takes, for a within-node entry, the n-subset
// of one node's GPUs at or under the threshold with the smallest largest
// factor (nodes with the most such GPUs first, then by id; subsets in
// lexicographic order; the first on ties), and for an across-nodes entry
// PM-First's choice among the GPUs at or under the threshold.
func palChoose(top topology, sf []float64, entries []palEntry, free []int, n int) []int {
	if n == 1 || n > top.perNode {
		return pmFirst(top, sf, free, n)
	}
	for _, e := range entries {
		var eligible []int
		for _, g := range free {
			if sf[g] <= e.threshold {
				eligible = append(eligible, g)
			}
		}
		if e.across {
			if len(eligible) >= n {
				return pmFirst(top, sf, eligible, n)
			}
			continue
		}
		if pick := withinNode(top, sf, eligible, n); pick != nil {
			return pick
		}
	}
	return nil
}

// byNode groups gpus (ascending) by node: each node's GPUs in order, and
// the nodes in the order their first GPU came.
func byNode(top topology, gpus []int) (map[int][]int, []int) {
	of := map[int][]int{}
	var nodes []int
	for _, g := range gpus {
		nd := top.node(g)
		if _, ok := of[nd]; !ok {
			nodes = append(nodes, nd)
		}
		of[nd] = append(of[nd], g)
	}
	return of, nodes
}

// withinNode is the within-node step of PAL's walk over eligible GPUs.
func withinNode(top topology, sf []float64, eligible []int, n int) []int {
	byNode, nodes := byNode(top, eligible)
	nodes = slices.DeleteFunc(nodes, func(nd int) bool { return len(byNode[nd]) < n })
	slices.SortStableFunc(nodes, func(a, b int) int {
		return cmp.Or(cmp.Compare(len(byNode[b]), len(byNode[a])), cmp.Compare(a, b))
	})
	var best []int
	bestMax := 0.0
	for _, nd := range nodes {
		combinations(byNode[nd], n, func(set []int) {
			worst := sf[set[0]]
			for _, g := range set[1:] {
				worst = max(worst, sf[g])
			}
			if best == nil || worst < bestMax {
				best, bestMax = slices.Clone(set), worst
			}
		})
	}
	return best
}

// combinations calls visit with every n-subset of items in lexicographic
// order of positions (itertools.combinations).
func combinations(items []int, n int, visit func([]int)) {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	set := make([]int, n)
	for {
		for i, p := range idx {
			set[i] = items[p]
		}
		visit(set)
		i := n - 1
		for i >= 0 && idx[i] == i+len(items)-n {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < n; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

// packed is the Packed chooser (§5.5), blind to variability: a node
// whose free count is exactly n; else the node with the fewest free GPUs
// that still holds n (its lowest n); else, GPU count permitting, the
// nodes with the most free GPUs first, each giving its lowest ones.
func packed(top topology, free []int, n int) []int {
	byNode, nodes := byNode(top, free)
	for _, nd := range nodes {
		if len(byNode[nd]) == n {
			return slices.Clone(byNode[nd])
		}
	}
	bestNode := -1
	for _, nd := range nodes {
		if c := len(byNode[nd]); c >= n && (bestNode < 0 || c < len(byNode[bestNode])) {
			bestNode = nd
		}
	}
	if bestNode >= 0 {
		return slices.Clone(byNode[bestNode][:n])
	}
	if len(free) < n {
		return nil
	}
	var out []int
	for len(out) < n {
		most := -1
		for _, nd := range nodes {
			if len(byNode[nd]) > 0 && (most < 0 || len(byNode[nd]) > len(byNode[most])) {
				most = nd
			}
		}
		take := min(len(byNode[most]), n-len(out))
		out = append(out, byNode[most][:take]...)
		byNode[most] = byNode[most][take:]
	}
	return out
}

// randomChoose is the Random chooser (§5.8): random.sample over the free
// list from the scheduler process's generator, when n are free.
func randomChoose(rng *pyrand.Rand, free []int, n int) []int {
	if len(free) < n {
		return nil
	}
	picks := rng.Sample(len(free), n)
	out := make([]int, n)
	for i, p := range picks {
		out[i] = free[p]
	}
	return out
}
