package policy

import (
	"math"
	"slices"
	"sort"
	"strings"
)

// fgd is Fragmentation Gradient Descent (the FGD paper; POLICIES.md §2):
// the node whose fragmentation F_n(M) grows least by the placement wins.
// Its score is trunc(100·σ((F_before − F_after)/1000)), σ the logistic
// function: Δ in thousandths of a GPU, so one GPU of Δ moves the score
// from 50 to 26 or 73, and near Δ = 0 one point is about 40 thousandths.
// A sharing job tries every GPU it fits on (lowest index among those
// reaching the best score); whole-GPU and CPU-only jobs subtract their
// share from the fitting GPUs of least free share and take the
// lowest-index ones, which leaves the same F.
type fgd struct{}

func init() { Register[Policy](fgd{}) }

func (fgd) Name() string { return "fgd" }

// fgdScore is the simulator's score of a change in F_n(M).
func fgdScore(before, after float64) int {
	return int(100 / (1 + math.Exp(-(before-after)/1000)))
}

func (fgd) ScoreNodes(c *Cluster, r *Request, feasible []*Node, scores []int) {
	for i, n := range feasible {
		scores[i], _ = c.fgdNode(r, n)
	}
}

// RawScore is n's FGD score: it is final (Normalise keeps it).
func (fgd) RawScore(c *Cluster, r *Request, n *Node) int {
	s, _ := c.fgdNode(r, n)
	return s
}

func (fgd) usesWorkload() {}

// Normalise keeps the raw score.
func (fgd) Normalise(raw, _, _ int) int { return raw }

func (fgd) PickGPUs(c *Cluster, r *Request, n *Node) []int {
	_, gpu := c.fgdNode(r, n)
	if gpu >= 0 {
		return []int{gpu}
	}
	return c.lowestWhole(r, n)
}

// fgdNode scores node n for r and, for a sharing job, returns the GPU to
// use (a cluster index; -1 for whole-GPU and CPU-only jobs). It goes
// through the cluster's Memo when there is one.
func (c *Cluster) fgdNode(r *Request, n *Node) (int, int) {
	if c.Memo != nil && !c.scans() { // a filter's rule is not in the memo's key
		return c.Memo.fgd(c, r, n)
	}
	var buf [16]int
	score, at := fgdCompute(c.Workload, r, n, c.GPUs, c.freeShares(n, buf[:0]), func(gi int) bool { return c.GPUFits(c.GPUs[gi], r) })
	if at < 0 {
		return score, -1
	}
	return score, n.GPUs[at]
}

// fgdCompute is the FGD score of r on node n with free shares free; fits
// says whether r fits a GPU (by cluster index). It returns the score and,
// for a sharing job, the position in n.GPUs of the GPU to use.
func fgdCompute(w *Workload, r *Request, n *Node, gpus []*GPU, free []int, fits func(int) bool) (int, int) {
	cpu := n.CPUFree()
	before := NodeFrag(w, n.Model, cpu, free)
	after := slices.Clone(free)
	cpu -= r.CPUMilli
	if r.GPUs == 0 {
		return fgdScore(before, NodeFrag(w, n.Model, cpu, after)), -1
	}
	g := r.MilliOn(gpus[n.GPUs[0]])
	if r.GPUs == 1 && g < MilliPerGPU {
		best, at := -1, -1
		for i, gi := range n.GPUs {
			if !fits(gi) {
				continue
			}
			after[i] -= g
			if s := fgdScore(before, NodeFrag(w, n.Model, cpu, after)); s > best {
				best, at = s, i
			}
			after[i] += g
		}
		return best, at
	}
	var order []int
	for i, gi := range n.GPUs {
		if fits(gi) {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return free[order[a]] < free[order[b]] })
	for _, i := range order[:min(len(order), r.GPUs)] {
		after[i] -= g
	}
	return fgdScore(before, NodeFrag(w, n.Model, cpu, after)), -1
}

// Memo caches FGD node scores across decisions, for replays and large
// clusters where most nodes do not change between two decisions. Each
// entry is stored with the node state it was computed from (free CPU and
// free shares) and the request's class, and is used only while the node
// is still in that state, so a stale score is never served.
type Memo struct {
	workload *Workload
	nodes    map[string]*nodeMemo
	classes  map[memoKey]int
}

type nodeMemo struct {
	cpuFree int64
	free    []int
	vram    []int64 // each GPU's used VRAM, which moves with its holes
	// alive is each GPU's liveness: a GPU made suspect (no answer, or its
	// supervisor said it is down) changes nothing else, and a choice
	// remembered from before kept naming it (a virtual run with scheduler
	// kills retried such a GPU for ever at one instant).
	alive []bool
	// scores[class] is the score+1 (0: not computed) and gpu the position.
	scores []int32
	gpus   []int8
}

// memoKey is what an FGD score depends on besides the node: the request's
// CPU, share, GPU count and models. Pins, holds and VRAM only filter.
type memoKey struct {
	cpu    int64
	milli  int
	vram   int64
	gpus   int
	models string
}

// NewMemo returns an empty memo.
func NewMemo() *Memo { return &Memo{nodes: map[string]*nodeMemo{}, classes: map[memoKey]int{}} }

func (m *Memo) fgd(c *Cluster, r *Request, n *Node) (int, int) {
	if m.workload != c.Workload {
		m.workload = c.Workload
		clear(m.nodes)
	}
	key := memoKey{cpu: r.CPUMilli, milli: r.Milli, vram: r.VRAM, gpus: r.GPUs, models: strings.Join(r.Models, "|")}
	class, ok := m.classes[key]
	if !ok {
		class = len(m.classes)
		m.classes[key] = class
	}
	nm := m.nodes[n.ID]
	if nm == nil {
		nm = &nodeMemo{}
		m.nodes[n.ID] = nm
	}
	cpu := n.CPUFree()
	same := nm.cpuFree == cpu && len(nm.free) == len(n.GPUs)
	for i, gi := range n.GPUs {
		if !same {
			break
		}
		g := c.GPUs[gi]
		same = nm.free[i] == g.MilliFree() && nm.vram[i] == g.VRAMUsed() && nm.alive[i] == g.Alive
	}
	if !same {
		nm.cpuFree = cpu
		nm.free = c.freeShares(n, nm.free)
		nm.vram, nm.alive = nm.vram[:0], nm.alive[:0]
		for _, gi := range n.GPUs {
			nm.vram = append(nm.vram, c.GPUs[gi].VRAMUsed())
			nm.alive = append(nm.alive, c.GPUs[gi].Alive)
		}
		clear(nm.scores)
	}
	if class >= len(nm.scores) {
		nm.scores = append(nm.scores, make([]int32, class+1-len(nm.scores))...)
		nm.gpus = append(nm.gpus, make([]int8, class+1-len(nm.gpus))...)
	}
	// A sharing job's GPU choice also depends on which GPUs it may use
	// (holds, pins, VRAM holes), so only choices over every GPU whose
	// share fits are cached.
	plain := r.PinGPU == "" && len(r.Held) == 0
	if s := nm.scores[class]; s > 0 && plain {
		at := int(nm.gpus[class])
		if at < 0 {
			return int(s - 1), -1
		}
		return int(s - 1), n.GPUs[at]
	}
	score, at := fgdCompute(c.Workload, r, n, c.GPUs, nm.free, func(gi int) bool { return c.GPUFits(c.GPUs[gi], r) })
	if plain && at < 128 {
		nm.scores[class], nm.gpus[class] = int32(score+1), int8(at)
	}
	if at < 0 {
		return score, -1
	}
	return score, n.GPUs[at]
}
