package policy

import (
	"fmt"
	"slices"
	"sort"
)

// NodeScorer is a policy that scores whole nodes and then picks GPUs on
// the winner, the way the FGD paper's simulator (a Kubernetes scheduler)
// does: random, dotprod, gpu-clustering, gpu-packing, best-fit and fgd.
// Scores are integers on 0..100; the highest wins, ties go to the node of
// lowest Rank.
type NodeScorer interface {
	Policy
	// ScoreNodes writes the score of each feasible node into scores (same
	// order). Feasible nodes are those where the request fits now.
	ScoreNodes(c *Cluster, r *Request, feasible []*Node, scores []int)
	// PickGPUs chooses the request's GPUs (cluster indexes) on node n,
	// which is feasible.
	PickGPUs(c *Cluster, r *Request, n *Node) []int
}

// Scaling constants of the simulator's scores (POLICIES.md §2): the
// largest node it normalises by has 128 cores and 8 GPUs.
const (
	maxCPUMilli = 128000
	maxGPUMilli = 8000
)

// fitting appends to buf the indexes of n's GPUs where r fits now (share,
// VRAM, model, pins, holds), in GPU order.
func (c *Cluster) fitting(n *Node, r *Request, buf []int) []int {
	buf = buf[:0]
	for _, gi := range n.GPUs {
		if c.GPUFits(c.GPUs[gi], r) {
			buf = append(buf, gi)
		}
	}
	return buf
}

// NodeFeasible is the filter of POLICIES.md §1: the node is alive with the
// CPU and memory free; for a GPU job it has at least r.GPUs GPUs the job
// fits on (a whole-GPU job needs them fully free, which its share says).
func (c *Cluster) NodeFeasible(n *Node, r *Request) bool {
	if !r.NodeFits(n) {
		return false
	}
	if r.GPUs == 0 {
		return true
	}
	if len(n.GPUs) < r.GPUs || !r.allowsModel(n.Model) {
		return false
	}
	count := 0
	for _, gi := range n.GPUs {
		if c.GPUFits(c.GPUs[gi], r) {
			count++
			if count == r.GPUs {
				return true
			}
		}
	}
	return false
}

// placeByNode runs a NodeScorer: filter, score, and the best MaxCandidates
// nodes by score then rank, each with the GPUs the policy picks there.
func placeByNode(c *Cluster, r *Request, p NodeScorer) []Placement {
	var nodes []*Node
	var scores []int
	if rs, ok := p.(RawNodeScorer); ok && c.Index != nil && indexable(r) && !c.scans() {
		nodes, scores = c.Index.topNodes(c, r, rs, MaxCandidates)
		if VerifyIndex {
			sn, ss := scanNodes(c, r, p)
			if !slices.Equal(nodes, sn) || !slices.Equal(scores, ss) {
				panic(fmt.Sprintf("policy: the index of %s chose %v %v for %+v, a scan %v %v (a change was not Touched)",
					p.Name(), nodeIDs(nodes), scores, *r, nodeIDs(sn), ss))
			}
		}
	} else {
		nodes, scores = scanNodes(c, r, p)
	}
	out := make([]Placement, 0, len(nodes))
	for i, n := range nodes {
		pl := Placement{Node: n.ID, NodeIdx: n.Index, Score: float64(scores[i])}
		for _, gi := range p.PickGPUs(c, r, n) {
			pl.GPUs = append(pl.GPUs, c.GPUs[gi].ID)
			pl.GPUIdx = append(pl.GPUIdx, gi)
		}
		out = append(out, pl)
	}
	return out
}

func nodeIDs(ns []*Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

// scanNodes filters and scores every node: the best MaxCandidates nodes
// by score then rank, and their scores.
func scanNodes(c *Cluster, r *Request, p NodeScorer) ([]*Node, []int) {
	var feasible []*Node
	for _, n := range c.Nodes {
		if c.NodeFeasible(n, r) {
			feasible = append(feasible, n)
		}
	}
	if len(feasible) == 0 {
		return nil, nil
	}
	scores := make([]int, len(feasible))
	if len(feasible) > 1 {
		// A single feasible node is taken without scoring, as the
		// simulator does (so random draws nothing for it).
		p.ScoreNodes(c, r, feasible, scores)
	}
	order := topNodes(feasible, scores, MaxCandidates)
	nodes, top := make([]*Node, len(order)), make([]int, len(order))
	for k, i := range order {
		nodes[k], top[k] = feasible[i], scores[i]
	}
	return nodes, top
}

// topNodes returns the positions of the best k nodes: highest score, then
// lowest rank.
func topNodes(nodes []*Node, scores []int, k int) []int {
	better := func(i, j int) bool {
		if scores[i] != scores[j] {
			return scores[i] > scores[j]
		}
		return nodes[i].Rank < nodes[j].Rank
	}
	top := make([]int, 0, k+1)
	for i := range nodes {
		at := len(top)
		for at > 0 && better(i, top[at-1]) {
			at--
		}
		if at >= k {
			continue
		}
		top = slices.Insert(top, at, i)
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}

// lowestWhole is the GPU choice for whole-GPU jobs under every paper
// policy: the r.GPUs lowest-index GPUs the job fits on (fully free ones,
// for a whole-GPU share).
func (c *Cluster) lowestWhole(r *Request, n *Node) []int {
	if r.GPUs == 0 {
		return nil
	}
	fit := c.fitting(n, r, nil)
	return fit[:min(len(fit), r.GPUs)]
}

// bestShare is the "best" GPU choice of POLICIES.md §2: for a sharing job
// the GPU with the least free share that still fits, lowest index on ties;
// for whole-GPU jobs the lowest-index fitting GPUs.
func (c *Cluster) bestShare(r *Request, n *Node) []int {
	if r.GPUs != 1 {
		return c.lowestWhole(r, n)
	}
	best := -1
	for _, gi := range n.GPUs {
		g := c.GPUs[gi]
		if !c.GPUFits(g, r) {
			continue
		}
		if r.Whole(g) {
			return []int{gi}
		}
		if best < 0 || g.MilliFree() < c.GPUs[best].MilliFree() {
			best = gi
		}
	}
	if best < 0 {
		return nil
	}
	return []int{best}
}

// ascendingFree returns the fitting GPUs of n in ascending free share,
// stable in GPU order.
func (c *Cluster) ascendingFree(r *Request, n *Node) []int {
	fit := c.fitting(n, r, nil)
	sort.SliceStable(fit, func(a, b int) bool { return c.GPUs[fit[a]].MilliFree() < c.GPUs[fit[b]].MilliFree() })
	return fit
}

// nodeFree is R, the node's summed free GPU share.
func (c *Cluster) nodeFree(n *Node) int {
	R := 0
	for _, gi := range n.GPUs {
		R += c.GPUs[gi].MilliFree()
	}
	return R
}

// demand is k·g, the request's total GPU share on node n.
func (c *Cluster) demand(r *Request, n *Node) int {
	if r.GPUs == 0 || len(n.GPUs) == 0 {
		return 0
	}
	return r.GPUs * r.MilliOn(c.GPUs[n.GPUs[0]])
}
