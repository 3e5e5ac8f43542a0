package policy

import (
	"math"
	"slices"
	"strings"

	"github.com/gpusched/gpusched/vram"
)

// KeyedRanker is a GPURanker whose order is a key of each GPU alone: a
// before b exactly when (Key(a), a.Index) < (Key(b), b.Index). An Index
// keeps the GPUs in that order, so a decision visits the best GPUs first
// instead of scanning them all (binpack, spread, first-fit).
type KeyedRanker interface {
	GPURanker
	// Key is g's place in the order: the smaller, the better; equal keys
	// go to the lower GPU index. It must agree with Better.
	Key(g *GPU) (float64, int64)
}

// RawNodeScorer is a NodeScorer whose score of a node is a raw score that
// depends only on that node's state and the request's class, then
// normalised over the feasible nodes (best-fit's min-max) or kept (fgd).
// An Index keeps the feasible nodes of each request class in raw-score
// order, so a decision reads the best few instead of scoring every node.
type RawNodeScorer interface {
	NodeScorer
	// RawScore is n's score for r before normalisation, on 0..100.
	RawScore(c *Cluster, r *Request, n *Node) int
	// Normalise is the final score of a raw score, given the highest and
	// the lowest raw score among the feasible nodes. It must not decrease
	// as raw grows.
	Normalise(raw, hi, lo int) int
}

// Index keeps a Cluster's GPUs and nodes in the orders its policies decide
// by, so that placing a single-GPU job under binpack, spread or first-fit,
// and any job under best-fit or fgd, costs about log(n) rather than a
// scan of the cluster. Whoever changes a GPU or node of the cluster says
// so with Cluster.Touch or Cluster.TouchNode (and Cluster.Renumbered when
// indexes change); the Index catches up lazily at the next decision. A
// Cluster without an Index is scanned, and gives the same decisions.
type Index struct {
	// gpuLog and nodeLog are the GPUs and nodes changed, in order; each
	// tree remembers how far it has read them.
	gpuLog, nodeLog []int32
	ranked          map[string]*rankTree
	classes         map[classKey]*classTree
	uses            uint64
	// What the trees were built for: a change starts them over.
	nGPUs, nNodes int
	vramModel     vram.Model
}

// NewIndex returns an empty index; set it as a Cluster's Index.
func NewIndex() *Index { return &Index{} }

// VerifyIndex makes every indexed decision check itself against a scan
// of the cluster and panic on a difference. Tests set it: a change that
// was not Touched shows up as a panic naming the decision.
var VerifyIndex bool

// maxClassEntries bounds the memory of the per-class node orders (items
// over all classes); the least recently used class goes first.
const maxClassEntries = 1 << 20

// Touch tells the cluster's Index, if it has one, that g changed (its
// allocations, shares, util or liveness), and with it g's node.
func (c *Cluster) Touch(g *GPU) {
	if c.Index != nil {
		c.Index.gpuLog = append(c.Index.gpuLog, int32(g.Index))
		c.Index.nodeLog = append(c.Index.nodeLog, int32(g.NodeIndex))
		c.Index.bound(c)
	}
}

// TouchNode tells the cluster's Index, if it has one, that n changed (its
// CPU, memory or liveness).
func (c *Cluster) TouchNode(n *Node) {
	if c.Index != nil {
		c.Index.nodeLog = append(c.Index.nodeLog, int32(n.Index))
		c.Index.bound(c)
	}
}

// bound starts the index over when its change logs grew past what any
// tree would read rather than be rebuilt (decisions under a policy the
// index does not serve never read them).
func (x *Index) bound(c *Cluster) {
	if len(x.gpuLog) > 4*len(c.GPUs)+8192 || len(x.nodeLog) > 4*len(c.Nodes)+8192 {
		x.reset(nil)
	}
}

// Renumbered tells the cluster's Index, if it has one, that GPUs or nodes
// were added or renumbered: it starts over at the next decision.
func (c *Cluster) Renumbered() {
	if c.Index != nil {
		c.Index.reset(nil)
	}
}

func (x *Index) reset(c *Cluster) {
	x.gpuLog, x.nodeLog = x.gpuLog[:0], x.nodeLog[:0]
	x.ranked, x.classes = map[string]*rankTree{}, map[classKey]*classTree{}
	x.nGPUs, x.nNodes = -1, -1
	if c != nil {
		x.nGPUs, x.nNodes, x.vramModel = len(c.GPUs), len(c.Nodes), c.VRAMModel
	}
}

// sync starts the index over if the cluster is not the one it was built
// for, and trims the change logs every tree has read.
func (x *Index) sync(c *Cluster) {
	if x.ranked == nil || x.nGPUs != len(c.GPUs) || x.nNodes != len(c.Nodes) || x.vramModel != c.VRAMModel {
		x.reset(c)
	}
	x.uses++
	// A tree that fell more than a rebuild behind is dropped (it is
	// rebuilt when next used); the logs then lose what all have read.
	gpuMin, nodeMin := len(x.gpuLog), len(x.nodeLog)
	for name, t := range x.ranked {
		if len(x.gpuLog)-t.cursor > 2*len(c.GPUs)+1024 {
			delete(x.ranked, name)
			continue
		}
		gpuMin = min(gpuMin, t.cursor)
	}
	for k, t := range x.classes {
		if len(x.nodeLog)-t.cursor > 2*len(c.Nodes)+1024 {
			delete(x.classes, k)
			continue
		}
		nodeMin = min(nodeMin, t.cursor)
	}
	if gpuMin > 4096 {
		x.gpuLog = x.gpuLog[:copy(x.gpuLog, x.gpuLog[gpuMin:])]
		for _, t := range x.ranked {
			t.cursor -= gpuMin
		}
	}
	if nodeMin > 4096 {
		x.nodeLog = x.nodeLog[:copy(x.nodeLog, x.nodeLog[nodeMin:])]
		for _, t := range x.classes {
			t.cursor -= nodeMin
		}
	}
}

// rankTree is the GPUs in a KeyedRanker's order, each with its free room
// (largest free VRAM block, free share) and each subtree with the most of
// either any of its GPUs has, so a search skips subtrees where nothing fits.
type rankTree struct {
	treap
	keyA     []float64
	keyB     []int64
	hole     []int64
	milli    []int32
	maxHole  []int64
	maxMilli []int32
	// util is each GPU's summed util (+Inf when dead), minUtil the least
	// of any GPU in the subtree: under the compute bound a search skips a
	// subtree where every GPU is too busy.
	util, minUtil []float64
	cursor        int
}

func newRankTree(c *Cluster, p KeyedRanker) *rankTree {
	n := len(c.GPUs)
	t := &rankTree{keyA: make([]float64, n), keyB: make([]int64, n), hole: make([]int64, n), milli: make([]int32, n),
		maxHole: make([]int64, n), maxMilli: make([]int32, n), util: make([]float64, n), minUtil: make([]float64, n)}
	t.treap = newTreap(n, t.less, t.pullRoom)
	for _, g := range c.GPUs {
		t.set(c, p, g)
	}
	return t
}

func (t *rankTree) less(a, b int32) bool {
	if t.keyA[a] != t.keyA[b] {
		return t.keyA[a] < t.keyA[b]
	}
	if t.keyB[a] != t.keyB[b] {
		return t.keyB[a] < t.keyB[b]
	}
	return a < b
}

func (t *rankTree) pullRoom(i int32) {
	h, m, u := t.hole[i], t.milli[i], t.util[i]
	for _, k := range [2]int32{t.left[i], t.right[i]} {
		if k != none {
			h, m, u = max(h, t.maxHole[k]), max(m, t.maxMilli[k]), min(u, t.minUtil[k])
		}
	}
	t.maxHole[i], t.maxMilli[i], t.minUtil[i] = h, m, u
}

// set (re)places g at its current key and room.
func (t *rankTree) set(c *Cluster, p KeyedRanker, g *GPU) {
	i := int32(g.Index)
	t.remove(i)
	t.keyA[i], t.keyB[i] = p.Key(g)
	t.hole[i], t.milli[i], t.util[i] = -1, -1, math.Inf(1)
	if g.Alive {
		// A dead GPU has no room: every search skips it.
		t.hole[i], t.milli[i], t.util[i] = c.largestBlock(g), int32(g.MilliFree()), g.Util
	}
	t.insert(i)
}

// largestBlock is the largest allocation g could take by VRAM alone.
func (c *Cluster) largestBlock(g *GPU) int64 {
	if c.VRAMModel == vram.Pooled || packed(g.Allocs) {
		return g.VRAMTotal - g.VRAMUsed()
	}
	return c.LargestFree(g)
}

// topGPUs is placeSingle's ranking through the index: the best k fitting
// GPUs under p, in order.
func (x *Index) topGPUs(c *Cluster, r *Request, p KeyedRanker, k int) []*GPU {
	x.sync(c)
	t := x.ranked[p.Name()]
	if t == nil {
		t = newRankTree(c, p)
		t.cursor = len(x.gpuLog)
		x.ranked[p.Name()] = t
	}
	for _, gi := range x.gpuLog[t.cursor:] {
		t.set(c, p, c.GPUs[gi])
	}
	t.cursor = len(x.gpuLog)
	// The room every fitting GPU has: its VRAM when the request names it
	// (a share's VRAM depends on the GPU), its share when it names one.
	// Under the compute bound a subtree whose least busy GPU has no
	// compute to spare is skipped (ComputeFits' test, which grows with
	// util, on that GPU).
	needHole, needMilli, bound := r.VRAM, int32(r.Milli), c.ComputeBound
	out := make([]*GPU, 0, k)
	var walk func(i int32)
	walk = func(i int32) {
		if i == none || len(out) == k || t.maxHole[i] < needHole || t.maxMilli[i] < needMilli ||
			(bound && !c.utilFits(t.minUtil[i], r)) {
			return
		}
		walk(t.left[i])
		if len(out) < k && c.Fits(c.GPUs[i], r) {
			out = append(out, c.GPUs[i])
		}
		walk(t.right[i])
	}
	walk(t.root)
	return out
}

// classKey is what a node's feasibility and raw score depend on besides
// the node: the policy and the request's class. Requests with pins or
// holds are not indexed.
type classKey struct {
	policy      string
	gpus, milli int
	vram, cpu   int64
	memory      int64
	models      string
	// workload is the cluster's, for a policy whose scores depend on it
	// (fgd): a new workload is a new class.
	workload *Workload
}

// workloadScorer is a policy whose node scores depend on the cluster's
// Workload.
type workloadScorer interface{ usesWorkload() }

// indexable reports whether r's decision depends only on its class.
func indexable(r *Request) bool { return r.PinGPU == "" && r.PinNode == "" && len(r.Held) == 0 }

// classTree is the feasible nodes of one request class in raw-score
// order: highest first, then lowest rank, then node order.
type classTree struct {
	treap
	req     Request
	score   []int32
	rank    []int
	cursor  int
	lastUse uint64
}

func (t *classTree) less(a, b int32) bool {
	if t.score[a] != t.score[b] {
		return t.score[a] > t.score[b]
	}
	if t.rank[a] != t.rank[b] {
		return t.rank[a] < t.rank[b]
	}
	return a < b
}

func (t *classTree) set(c *Cluster, p RawNodeScorer, n *Node) {
	i := int32(n.Index)
	t.remove(i)
	if c.NodeFeasible(n, &t.req) {
		t.score[i], t.rank[i] = int32(p.RawScore(c, &t.req, n)), n.Rank
		t.insert(i)
	}
}

func (x *Index) classTree(c *Cluster, r *Request, p RawNodeScorer) *classTree {
	key := classKey{policy: p.Name(), gpus: r.GPUs, milli: r.Milli, vram: r.VRAM, cpu: r.CPUMilli, memory: r.Memory,
		models: strings.Join(r.Models, "|")}
	if _, ok := p.(workloadScorer); ok {
		key.workload = c.Workload
	}
	t := x.classes[key]
	if t == nil {
		if (len(x.classes)+1)*len(c.Nodes) > maxClassEntries {
			x.evictClass()
		}
		n := len(c.Nodes)
		t = &classTree{req: Request{GPUs: r.GPUs, Milli: r.Milli, VRAM: r.VRAM, CPUMilli: r.CPUMilli, Memory: r.Memory,
			Models: slices.Clone(r.Models)}, score: make([]int32, n), rank: make([]int, n)}
		t.treap = newTreap(n, t.less, nil)
		for _, node := range c.Nodes {
			t.set(c, p, node)
		}
		t.cursor = len(x.nodeLog)
		x.classes[key] = t
	}
	for _, ni := range x.nodeLog[t.cursor:] {
		t.set(c, p, c.Nodes[ni])
	}
	t.cursor = len(x.nodeLog)
	t.lastUse = x.uses
	return t
}

func (x *Index) evictClass() {
	var oldest classKey
	var at uint64
	found := false
	for k, t := range x.classes {
		if !found || t.lastUse < at {
			oldest, at, found = k, t.lastUse, true
		}
	}
	delete(x.classes, oldest)
}

// topNodes is placeByNode's ranking through the index: the positions, in
// the returned nodes, of the best k by final score then rank, and their
// final scores.
func (x *Index) topNodes(c *Cluster, r *Request, p RawNodeScorer, k int) ([]*Node, []int) {
	x.sync(c)
	t := x.classTree(c, r, p)
	first := t.first()
	if first == none {
		return nil, nil
	}
	if t.next(first) == none {
		// A single feasible node is taken unscored, as the scan does.
		return []*Node{c.Nodes[first]}, []int{0}
	}
	hi, lo := int(t.score[first]), int(t.score[t.last()])
	norm := func(i int32) int { return p.Normalise(int(t.score[i]), hi, lo) }
	// Candidates: from each run of equal raw score, its first k (they come
	// in rank order), for as long as a run's final score can still reach
	// the k-th candidate's (normalising may merge runs, and then rank
	// decides between them).
	var cands []int32
	kth := -1
	for i := first; i != none; {
		if kth >= 0 && norm(i) < kth {
			break
		}
		run := t.score[i]
		for n := 0; i != none && t.score[i] == run; n++ {
			if n == k {
				i = t.firstWhere(func(y int32) bool { return t.score[y] < run })
				break
			}
			cands = append(cands, i)
			i = t.next(i)
		}
		if kth < 0 && len(cands) >= k {
			kth = norm(cands[k-1])
		}
	}
	slices.SortFunc(cands, func(a, b int32) int {
		if na, nb := norm(a), norm(b); na != nb {
			return nb - na
		}
		if t.rank[a] != t.rank[b] {
			return cmpInt(t.rank[a], t.rank[b])
		}
		return int(a - b)
	})
	cands = cands[:min(len(cands), k)]
	nodes, scores := make([]*Node, len(cands)), make([]int, len(cands))
	for i, ni := range cands {
		nodes[i], scores[i] = c.Nodes[ni], norm(ni)
	}
	return nodes, scores
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
