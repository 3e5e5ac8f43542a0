package policy

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/vram"
)

// MaxCandidates is how many ranked placements Place returns: the winner and
// the fallbacks the scheduler tries when a GPU actor refuses.
const MaxCandidates = 4

// Place ranks the ways to place r under p, best first (at most
// MaxCandidates). An empty result means the request fits nowhere now.
func Place(c *Cluster, r *Request, p Policy) []Placement {
	if ns, ok := p.(NodeScorer); ok {
		return placeByNode(c, r, ns)
	}
	gr := p.(GPURanker)
	switch {
	case r.GPUs == 0:
		return placeCPUOnly(c, r)
	case r.GPUs == 1:
		return placeSingle(c, r, gr)
	default:
		return placeGang(c, r, gr)
	}
}

func placeSingle(c *Cluster, r *Request, p GPURanker) []Placement {
	var best []*GPU
	if kr, ok := p.(KeyedRanker); ok && c.Index != nil && !c.scans() {
		best = c.Index.topGPUs(c, r, kr, MaxCandidates)
		if VerifyIndex {
			verifyGPUs(best, scanSingle(c, r, p), p, r)
		}
	} else {
		best = scanSingle(c, r, p)
	}
	out := make([]Placement, len(best))
	for i, g := range best {
		out[i] = Placement{Node: g.Node, NodeIdx: g.NodeIndex, GPUs: []string{g.ID}, GPUIdx: []int{g.Index}, Score: p.Score(c, g)}
	}
	return out
}

// scanSingle ranks every GPU where r fits: the best MaxCandidates under p.
func scanSingle(c *Cluster, r *Request, p GPURanker) []*GPU {
	best := make([]*GPU, 0, MaxCandidates)
	for _, g := range c.GPUs {
		if c.Fits(g, r) {
			best = insertTop(c, p, best, g, MaxCandidates)
		}
	}
	return best
}

func verifyGPUs(indexed, scanned []*GPU, p Policy, r *Request) {
	same := len(indexed) == len(scanned)
	for i := 0; same && i < len(indexed); i++ {
		same = indexed[i] == scanned[i]
	}
	if !same {
		ids := func(gs []*GPU) []string {
			var out []string
			for _, g := range gs {
				out = append(out, g.ID)
			}
			return out
		}
		panic(fmt.Sprintf("policy: the index of %s chose %v for %+v, a scan %v (a change was not Touched)", p.Name(), ids(indexed), *r, ids(scanned)))
	}
}

// insertTop keeps top as the best k GPUs under p, in order.
func insertTop(c *Cluster, p GPURanker, top []*GPU, g *GPU, k int) []*GPU {
	i := len(top)
	for i > 0 && p.Better(c, g, top[i-1]) {
		i--
	}
	if i >= k {
		return top
	}
	if len(top) < k {
		top = append(top, nil)
	}
	copy(top[i+1:], top[i:len(top)-1])
	top[i] = g
	return top
}

// placeGang chooses a node with r.GPUs fitting GPUs: on each node the best
// r.GPUs GPUs under p; nodes are ranked by their best GPU under p, then by
// the summed score, then node order.
func placeGang(c *Cluster, r *Request, p GPURanker) []Placement {
	type option struct {
		node *Node
		gpus []*GPU
		sum  float64
	}
	var opts []option
	for _, n := range c.Nodes {
		if !r.NodeFits(n) || len(n.GPUs) < r.GPUs {
			continue
		}
		var top []*GPU
		for _, gi := range n.GPUs {
			if g := c.GPUs[gi]; c.Fits(g, r) {
				top = insertTop(c, p, top, g, r.GPUs)
			}
		}
		if len(top) < r.GPUs {
			continue
		}
		var sum float64
		for _, g := range top {
			sum += p.Score(c, g)
		}
		opts = append(opts, option{n, top, sum})
	}
	sort.SliceStable(opts, func(i, j int) bool {
		a, b := opts[i], opts[j]
		if p.Better(c, a.gpus[0], b.gpus[0]) != p.Better(c, b.gpus[0], a.gpus[0]) {
			return p.Better(c, a.gpus[0], b.gpus[0])
		}
		if a.sum != b.sum {
			return a.sum > b.sum
		}
		return a.node.Index < b.node.Index
	})
	var out []Placement
	for _, o := range opts[:min(len(opts), MaxCandidates)] {
		pl := Placement{Node: o.node.ID, NodeIdx: o.node.Index, Score: o.sum / float64(len(o.gpus))}
		for _, g := range o.gpus {
			pl.GPUs = append(pl.GPUs, g.ID)
			pl.GPUIdx = append(pl.GPUIdx, g.Index)
		}
		out = append(out, pl)
	}
	return out
}

// placeCPUOnly puts a CPU-only job on the first node (in node order) with
// the CPU and memory it needs: GPU policies do not rank host resources.
func placeCPUOnly(c *Cluster, r *Request) []Placement {
	var out []Placement
	for _, n := range c.Nodes {
		if r.NodeFits(n) {
			out = append(out, Placement{Node: n.ID, NodeIdx: n.Index, Score: 100})
			if len(out) == MaxCandidates {
				break
			}
		}
	}
	return out
}

// Why explains why r fits nowhere now, in the words a pending job shows.
// Reasons that start with "fragmented" mean enough VRAM is free on some GPU
// but in holes too small for the job.
func Why(c *Cluster, r *Request) string {
	if why := c.filteredOut(r); why != "" {
		return why
	}
	need := model.Bytes(r.VRAM)
	if r.VRAM == 0 && r.Milli > 0 {
		need = model.Bytes(0)
	}
	if r.GPUs == 0 {
		return fmt.Sprintf("no node with %s free CPUs and %s free memory", Cores(r.CPUMilli), model.Bytes(r.Memory))
	}
	var eligible, held, fragmented, nodeShort, shareShort, computeShort int
	var mostFree int64
	var mostFreeGPU, fragGPU string
	var fragFree, fragHole int64
	for _, g := range c.GPUs {
		if !r.Eligible(g) {
			continue
		}
		eligible++
		if r.GPUs > 1 {
			break // a gang's reason says only that one GPU is eligible (below)
		}
		want := r.VRAMOn(g)
		free := g.VRAMTotal - g.VRAMUsed()
		hole := c.LargestFree(g)
		switch {
		case g.MilliFree() < r.MilliOn(g):
			shareShort++
		case c.ComputeBound && !c.ComputeFits(g, r) && hole >= want:
			computeShort++
		case r.Held[g.Index] && hole >= want:
			held++
		case hole >= want:
			nodeShort++
		case free >= want:
			fragmented++
			if fragGPU == "" {
				fragGPU, fragFree, fragHole = g.ID, free, hole
			}
		}
		if free > mostFree || mostFreeGPU == "" {
			mostFree, mostFreeGPU = free, g.ID
		}
	}
	switch {
	case eligible == 0:
		if len(r.Models) > 0 || r.PinGPU != "" || r.PinNode != "" {
			return fmt.Sprintf("model constraint: no live GPU matching the job's models/pins has %s", need)
		}
		return fmt.Sprintf("no live GPU has %s of VRAM", need)
	case r.GPUs > 1:
		return fmt.Sprintf("no node has %d GPUs with %s free each, plus the CPU and memory", r.GPUs, shareWords(r))
	case fragmented > 0 && nodeShort == 0 && held == 0:
		return fmt.Sprintf("fragmented: %s has %s free but its largest free block is %s (need %s)",
			fragGPU, model.Bytes(fragFree), model.Bytes(fragHole), need)
	case computeShort > 0 && nodeShort == 0 && held == 0:
		return fmt.Sprintf("no GPU has compute to spare: the %d with room for %s are too busy for %s%% more (each stops at %s%%%s)",
			computeShort, shareWords(r), strconv.FormatFloat(r.Util, 'f', -1, 64), strconv.FormatFloat(c.UtilLimit(), 'f', -1, 64), oversubscribeHint(c))
	case held > 0 && nodeShort == 0:
		return fmt.Sprintf("waiting: the GPUs with room for %s are held for an older job", shareWords(r))
	case nodeShort > 0:
		return fmt.Sprintf("no node with %s free CPUs and %s free memory beside a GPU with %s free", Cores(r.CPUMilli), model.Bytes(r.Memory), shareWords(r))
	case shareShort > 0 && r.Milli > 0:
		return fmt.Sprintf("no GPU has %d/1000 of its share free", r.Milli)
	}
	return fmt.Sprintf("no GPU with %s free VRAM (most free: %s on %s)", need, model.Bytes(mostFree), mostFreeGPU)
}

// oversubscribeHint tells how to let GPUs past 100 %, while they may not.
func oversubscribeHint(c *Cluster) string {
	if c.UtilLimit() > 100 {
		return ""
	}
	return "; --oversubscribe lets GPUs go past 100 % and slow down"
}

// shareWords names what a request needs of each GPU: its VRAM, or its share.
func shareWords(r *Request) string {
	if r.VRAM == 0 && r.Milli > 0 {
		return strconv.Itoa(r.Milli) + "/1000 of a GPU"
	}
	return model.Bytes(r.VRAM).String()
}

// Preemption is a placement that needs victims stopped first.
type Preemption struct {
	Placement
	Victims  []string
	LostWork float64
}

// maxVictimCandidates bounds the victims considered per GPU, so the subset
// search (2^n) stays small; the least-lost-work candidates are kept.
const maxVictimCandidates = 10

// ChooseVictims finds the preemption that lets r fit on one GPU: among
// strictly lower-priority preemptible jobs, the fewest victims, then the
// least lost work, then the lower GPU id. Only single-GPU requests preempt.
// victimShares returns, for a victim, its shares on every GPU (a gang
// victim frees all of them); nil means only the share on this GPU.
func ChooseVictims(c *Cluster, r *Request) (Preemption, bool) {
	var best Preemption
	found := false
	if r.GPUs != 1 {
		return best, false
	}
	for _, g := range c.GPUs {
		if !r.Eligible(g) || r.Held[g.Index] {
			continue
		}
		var cands []Share
		for _, s := range g.Shares {
			if s.Preemptible && s.Priority < r.Priority {
				cands = append(cands, s)
			}
		}
		if len(cands) == 0 {
			continue
		}
		sort.SliceStable(cands, func(i, j int) bool { return cands[i].LostWork < cands[j].LostWork })
		cands = cands[:min(len(cands), maxVictimCandidates)]
		node := c.Nodes[g.NodeIndex]
		n := len(cands)
		var gBest []Share
		gLost := 0.0
		for size := 1; size <= n && gBest == nil; size++ {
			if found && size > len(best.Victims) {
				break
			}
			forSubsets(n, size, func(idx []int) {
				set := make(map[string]bool, len(idx))
				var lost, util float64
				var cpu, mem int64
				for _, i := range idx {
					set[cands[i].JobID] = true
					lost += cands[i].LostWork
					util += cands[i].Util
					cpu += cands[i].CPUMilli
					mem += cands[i].Memory
				}
				hole := vram.LargestFree(g.VRAMTotal, c.VRAMModel, g.Allocs, func(a vram.Alloc) bool { return set[a.Owner] })
				if hole < r.VRAMOn(g) || g.MilliFree()+freed(g, set) < r.MilliOn(g) ||
					(c.ComputeBound && !c.utilFits(g.Util-util, r)) ||
					node.CPUFree()+cpu < r.CPUMilli || node.MemTotal-node.MemUsed+mem < r.Memory {
					return
				}
				if gBest == nil || lost < gLost {
					gBest = make([]Share, 0, len(idx))
					for _, i := range idx {
						gBest = append(gBest, cands[i])
					}
					gLost = lost
				}
			})
		}
		if gBest == nil {
			continue
		}
		if !found || len(gBest) < len(best.Victims) || (len(gBest) == len(best.Victims) && gLost < best.LostWork) {
			best = Preemption{Placement: Placement{Node: g.Node, NodeIdx: g.NodeIndex, GPUs: []string{g.ID}, GPUIdx: []int{g.Index}}, LostWork: gLost}
			best.Victims = best.Victims[:0]
			for _, s := range gBest {
				best.Victims = append(best.Victims, s.JobID)
			}
			found = true
		}
	}
	return best, found
}

// freed is the GPU share the jobs in set hold on g.
func freed(g *GPU, set map[string]bool) int {
	m := 0
	for _, s := range g.Shares {
		if set[s.JobID] {
			m += s.Milli
		}
	}
	return m
}

// Cores formats thousandths of a core as cores ("4", "0.5").
func Cores(milli int64) string { return strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64) }

// forSubsets calls fn with every size-k subset of 0..n-1 in lexicographic order.
func forSubsets(n, k int, fn func([]int)) {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		fn(idx)
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

// Hold picks the GPUs to hold for an aged head-of-line job so that nothing
// behind it can take them: for a single-GPU job, the eligible GPU not yet
// held with the most free VRAM (lower id on ties); for a gang, the eligible
// GPUs of the node with the most such free VRAM. Held GPUs only drain, so
// the job fits there once their jobs end: it cannot starve.
func Hold(c *Cluster, r *Request, held map[int]bool) []int {
	if r.GPUs == 0 {
		return nil
	}
	if r.GPUs == 1 {
		bestIdx, bestFree := -1, int64(-1)
		for _, g := range c.GPUs {
			if !r.Eligible(g) || held[g.Index] {
				continue
			}
			if free := g.VRAMTotal - g.VRAMUsed(); free > bestFree {
				bestIdx, bestFree = g.Index, free
			}
		}
		if bestIdx < 0 {
			return nil
		}
		return []int{bestIdx}
	}
	var bestGPUs []int
	bestFree := int64(-1)
	for _, n := range c.Nodes {
		var gpus []int
		var free int64
		for _, gi := range n.GPUs {
			g := c.GPUs[gi]
			if r.Eligible(g) && !held[gi] {
				gpus = append(gpus, gi)
				free += g.VRAMTotal - g.VRAMUsed()
			}
		}
		if len(gpus) >= r.GPUs && free > bestFree {
			bestGPUs, bestFree = gpus, free
		}
	}
	return bestGPUs
}

// filteredOut says, when some GPU has room for r but a filter in force
// refuses it, which filter and how many GPUs ("" when no filter is what
// stands in the way).
func (c *Cluster) filteredOut(r *Request) string {
	if !c.scans() || r.GPUs == 0 {
		return ""
	}
	refused := map[string]int{}
	first := ""
	for _, g := range c.GPUs {
		if !c.roomFor(g, r) || !r.NodeFits(c.Nodes[g.NodeIndex]) {
			continue
		}
		if ok, name := c.allowed(g, r); !ok {
			if first == "" {
				first = name
			}
			refused[name]++
		}
	}
	if first == "" {
		return ""
	}
	return fmt.Sprintf("the %s filter refuses the %d GPUs with room for it", first, refused[first])
}
