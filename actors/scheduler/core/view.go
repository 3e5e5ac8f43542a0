package core

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/vram"
)

// gpuState is what the scheduler knows of one GPU beyond the policy view:
// its last status (for snapshots and energy) and that status's version.
type gpuState struct {
	g        *policy.GPU
	status   events.GPUStatus
	statusAt time.Time // simulated time of the last status
	version  uint64
	model    model.GPUModel
	// leaseUntil is when the GPU is declared dead unless a heartbeat
	// renews it (wall time; zero: no lease running); dead is the last
	// incarnation declared dead (or reported down), whose messages are
	// ignored from then on.
	leaseUntil time.Time
	// renewedAt is when (simulated time) its lease was last renewed: it
	// was heard then, running its jobs.
	renewedAt time.Time
	dead      int
	// described is set once a restarted scheduler has read the GPU in
	// full (its jobs' specs and what ended there lately).
	described bool
}

// view is the scheduler's picture of the cluster.
type view struct {
	cluster policy.Cluster
	gpus    map[string]*gpuState
	nodes   map[string]*policy.Node
	// unsorted is set when GPUs or nodes joined since the last sort: the
	// order (and so every Index) is restored lazily, once per batch of joins.
	unsorted bool
	// held is the scheduler's set of GPUs (by index) held for aged jobs.
	held  map[int]bool
	seed  int64
	ranks map[string]int
	// levels are the GPUs' performance levels per application class
	// (perfLevels; nil: to be computed, after a GPU with variability
	// joined).
	levels *perfLevels
}

// perfLevels are the cluster's performance levels: per class, each
// GPU's level (0 the fastest) among the GPUs with a multiplier for it,
// and how many levels there are.
type perfLevels struct {
	of    map[string]map[string]int // GPU → class → level
	count map[string]int
}

// perfLevels groups the GPUs that carry variability into performance
// levels per class (model.PerformanceLevels), once per set of GPUs.
func (v *view) perfLevels() *perfLevels {
	if v.levels != nil {
		return v.levels
	}
	lv := &perfLevels{of: map[string]map[string]int{}, count: map[string]int{}}
	byClass := map[string][]string{}
	for _, g := range v.cluster.GPUs {
		for class := range g.Variability {
			byClass[class] = append(byClass[class], g.ID)
		}
	}
	for class, ids := range byClass {
		values := make([]float64, len(ids))
		for i, id := range ids {
			values[i] = v.gpus[id].g.Variability[class]
		}
		_, level, count := model.PerformanceLevels(values)
		lv.count[class] = count
		for i, id := range ids {
			if lv.of[id] == nil {
				lv.of[id] = map[string]int{}
			}
			lv.of[id][class] = level[i]
		}
	}
	v.levels = lv
	return lv
}

func newView(m vram.Model, seed int64, ranks map[string]int) *view {
	return &view{cluster: policy.Cluster{VRAMModel: m, Rand: rand.New(rand.NewSource(seed)), Memo: policy.NewMemo(),
		Index: policy.NewIndex()},
		gpus: map[string]*gpuState{}, nodes: map[string]*policy.Node{}, held: map[int]bool{}, seed: seed, ranks: ranks}
}

// rankOf is a node's tie-break rank: the configured one, else a draw fixed
// by the seed and the node's id (FNV-1a of both), so ranks do not depend on
// the order nodes join in.
func (v *view) rankOf(id string) int {
	if r, ok := v.ranks[id]; ok {
		return r
	}
	h := fnv.New32a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v.seed))
	h.Write(b[:])
	h.Write([]byte(id))
	// Configured ranks are below 2^31; drawn ones follow them.
	return 1<<31 + int(h.Sum32())
}

func splitNumber(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n, err := strconv.Atoi(s[i:])
	if err != nil {
		return s, -1
	}
	return s[:i], n
}

// node returns the node, creating it (not alive until it heartbeats).
func (v *view) node(id string) *policy.Node {
	if n, ok := v.nodes[id]; ok {
		return n
	}
	n := &policy.Node{ID: id, Index: len(v.cluster.Nodes), Rank: v.rankOf(id)}
	v.nodes[id] = n
	v.cluster.Nodes = append(v.cluster.Nodes, n)
	v.unsorted = true
	return n
}

// knows says whether the view has read gpu (from its up event or a
// status).
func (v *view) knows(gpu string) bool {
	_, ok := v.gpus[gpu]
	return ok
}

// nodeAlive says whether node is in the view and alive.
func (v *view) nodeAlive(node string) bool {
	n := v.nodes[node]
	return n != nil && n.Alive
}

// knownOn is how many GPUs of node the view knows.
func (v *view) knownOn(node string) int {
	if n, ok := v.nodes[node]; ok {
		return len(n.GPUs)
	}
	return 0
}

// addGPU learns a GPU from its up event or status; it reports whether it was new.
func (v *view) addGPU(st events.GPUStatus) (*gpuState, bool) {
	if s, ok := v.gpus[st.GPU]; ok {
		return s, false
	}
	m, err := model.LookupModel(st.Model)
	if err != nil {
		m = model.GPUModel{Name: st.Model, VRAM: model.Bytes(st.VRAMTotal), Speed: 1}
	}
	g := &policy.GPU{ID: st.GPU, Node: st.Node, Model: m.Name, VRAMTotal: st.VRAMTotal, Alive: true, Variability: st.Variability}
	if len(st.Variability) > 0 {
		v.levels = nil
	}
	s := &gpuState{g: g, model: m}
	v.gpus[st.GPU] = s
	n := v.node(st.Node)
	if n.Model == "" {
		n.Model = m.Name
	}
	g.Index, g.NodeIndex = len(v.cluster.GPUs), n.Index
	v.cluster.GPUs = append(v.cluster.GPUs, g)
	n.GPUs = append(n.GPUs, g.Index)
	v.unsorted = true
	return s, true
}

// sorted returns the cluster with GPUs and nodes in id order ("gpu-2"
// before "gpu-10"), which is what every tie-break on "lower GPU id" means.
func (v *view) sorted() *policy.Cluster {
	if v.unsorted {
		sortByID(v.cluster.Nodes, func(n *policy.Node) string { return n.ID })
		sortByID(v.cluster.GPUs, func(g *policy.GPU) string { return g.ID })
		v.reindex()
		v.cluster.Renumbered()
		v.unsorted = false
		clear(v.held) // holds name GPUs by index, which just changed
	}
	return &v.cluster
}

// naturalKey is an id split for natural order: "gpu-10" is ("gpu-", 10).
type naturalKey struct {
	prefix string
	num    int
	id     string
}

func keyOf(id string) naturalKey {
	p, n := splitNumber(id)
	return naturalKey{p, n, id}
}

func (a naturalKey) compare(b naturalKey) int {
	if a.prefix != b.prefix {
		return strings.Compare(a.prefix, b.prefix)
	}
	if a.num != b.num {
		return a.num - b.num
	}
	return strings.Compare(a.id, b.id)
}

// sortByID sorts xs in natural id order, splitting each id once (a join of
// 100,000 GPUs sorts them many times while they arrive).
func sortByID[T any](xs []T, id func(T) string) {
	type keyed struct {
		key naturalKey
		x   T
	}
	ks := make([]keyed, len(xs))
	for i, x := range xs {
		ks[i] = keyed{keyOf(id(x)), x}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return a.key.compare(b.key) })
	for i := range ks {
		xs[i] = ks[i].x
	}
}

func (v *view) reindex() {
	for i, n := range v.cluster.Nodes {
		n.Index = i
		n.GPUs = n.GPUs[:0]
	}
	for i, g := range v.cluster.GPUs {
		g.Index = i
		n := v.nodes[g.Node]
		g.NodeIndex = n.Index
		n.GPUs = append(n.GPUs, i)
	}
}

// feasible rejects, at submission, a job that could never fit the cluster:
// larger than every GPU, no such model or pinned GPU, no node big enough.
func (v *view) feasible(r *policy.Request) *model.FieldError {
	v.sorted()
	if r.GPUs == 0 {
		for _, n := range v.cluster.Nodes {
			if n.CPUMilli >= r.CPUMilli && n.MemTotal >= r.Memory {
				return nil
			}
		}
		return model.Errorf("cpu", "no node has %s CPUs and %s of memory", policy.Cores(r.CPUMilli), model.Bytes(r.Memory))
	}
	var largest int64
	modelOK, pinOK := false, r.PinGPU == "" && r.PinNode == ""
	for _, n := range v.cluster.Nodes {
		count := 0
		for _, gi := range n.GPUs {
			g := v.cluster.GPUs[gi]
			if r.PinGPU != "" && g.ID != r.PinGPU || r.PinNode != "" && g.Node != r.PinNode {
				continue
			}
			pinOK = true
			if len(r.Models) > 0 && !slices.Contains(r.Models, g.Model) {
				continue
			}
			modelOK = true
			largest = max(largest, g.VRAMTotal)
			if g.VRAMTotal >= r.VRAMOn(g) {
				count++
			}
		}
		if count >= r.GPUs && n.CPUMilli >= r.CPUMilli && n.MemTotal >= r.Memory {
			return nil
		}
	}
	switch {
	case !pinOK && r.PinGPU != "":
		return model.Errorf("gpu", "no GPU %q in this cluster", r.PinGPU)
	case !pinOK:
		return model.Errorf("node", "no node %q in this cluster", r.PinNode)
	case !modelOK:
		return model.Errorf("models", "no GPU of models %s in this cluster", strings.Join(r.Models, ", "))
	case largest < r.VRAM && len(r.Models) > 0:
		return model.Errorf("vram", "%s per GPU is larger than every GPU of the models asked for, %s (largest: %s)",
			model.Bytes(r.VRAM), strings.Join(r.Models, ", "), model.Bytes(largest))
	case largest < r.VRAM:
		return model.Errorf("vram", "%s per GPU is larger than every GPU in the cluster (largest: %s)", model.Bytes(r.VRAM), model.Bytes(largest))
	case r.GPUs > 1:
		return model.Errorf("gpus", "no node has %d GPUs with %s each and %s CPUs, %s memory", r.GPUs, model.Bytes(r.VRAM), policy.Cores(r.CPUMilli), model.Bytes(r.Memory))
	}
	return model.Errorf("cpu", "no node with a fitting GPU has %s CPUs and %s of memory", policy.Cores(r.CPUMilli), model.Bytes(r.Memory))
}

// request is what a placement policy is asked for j in this view: its
// shape, its pins (a pin drawn once no longer holds after its first
// start) and the GPUs held for aged jobs.
func (v *view) request(j *job) *policy.Request {
	r := &policy.Request{JobID: j.id, Priority: j.spec.Priority, GPUs: j.spec.GPUs, VRAM: int64(j.spec.VRAM),
		Milli: j.spec.Milli, Util: j.spec.Util, CPUMilli: j.spec.CPUMilli(), Memory: int64(j.spec.Memory), Models: j.spec.Models,
		PinGPU: j.spec.GPU, PinNode: j.spec.Node, Held: v.held, JobType: j.spec.JobType}
	if j.spec.PinOnce && j.firstStarted != nil {
		// Its pin drew its first placement only: it goes where the
		// policy puts it from now on.
		r.PinGPU, r.PinNode = "", ""
	}
	return r
}

// hasLowerPriorityRunning says a preemptible share of lower priority than
// j's runs on some GPU: only then may priority preemption free room for j.
func (v *view) hasLowerPriorityRunning(j *job) bool {
	for _, g := range v.cluster.GPUs {
		for _, sh := range g.Shares {
			if sh.Priority < j.spec.Priority && sh.Preemptible {
				return true
			}
		}
	}
	return false
}

// rankedBy takes, for each candidate shown, what the GPU rankers order by
// as the view stands now (when the policy ranked them).
func (v *view) rankedBy(ps []policy.Placement) []rankFigures {
	out := make([]rankFigures, min(len(ps), maxCandidatesInExplain))
	for i, p := range ps[:len(out)] {
		if len(p.GPUs) == 0 {
			continue // a CPU-only job's node
		}
		if gs, ok := v.gpus[p.GPUs[0]]; ok {
			out[i] = rankFigures{known: true, util: gs.g.Util, used: gs.g.VRAMUsed(), total: gs.g.VRAMTotal}
		}
	}
	return out
}

// releaseNode returns a job's CPU and memory to its node in the view.
func (v *view) releaseNode(j *job, node string) {
	if n, ok := v.nodes[node]; ok {
		n.CPUUsedMilli = max(0, n.CPUUsedMilli-j.spec.CPUMilli())
		n.MemUsed = max(0, n.MemUsed-int64(j.spec.Memory))
		v.cluster.TouchNode(n)
	}
}

// journalHold counts (sign 1) or no longer counts (-1) in the view the CPU
// and memory a job the journal says runs holds on its node: its node
// actor holds them until told otherwise, and a view without them placed
// other jobs there that the node refused, again and again at one instant
// on a virtual clock while a hung GPU kept the job unsettled.
func (v *view) journalHold(r *durable.Record, sign int64) {
	if r.Node == "" {
		return
	}
	n := v.node(r.Node)
	n.CPUUsedMilli = max(0, n.CPUUsedMilli+sign*r.Spec.CPUMilli())
	n.MemUsed = max(0, n.MemUsed+sign*int64(r.Spec.Memory))
	v.cluster.TouchNode(n)
}

// trainingNodes are the nodes with GPUs in the order the model numbers
// them (node ids in natural order: node-2 before node-10), each with its
// GPUs in natural order.
func (v *view) trainingNodes() []trainingNode {
	byNode := map[string][]string{}
	for id, gs := range v.gpus {
		byNode[gs.status.Node] = append(byNode[gs.status.Node], id)
	}
	out := make([]trainingNode, 0, len(byNode))
	for n, gpus := range byNode {
		slices.SortFunc(gpus, naturalCompare)
		out = append(out, trainingNode{id: n, gpus: gpus})
	}
	slices.SortFunc(out, func(a, b trainingNode) int { return naturalCompare(a.id, b.id) })
	return out
}

// refreshWorkload rebuilds the typical classes from c's counts when they
// changed (or the most common GPU did), before a decision or a measure
// needs them.
func (v *view) refreshWorkload(c *jobClasses) {
	if w, changed := c.typical(v.cluster.GPUs); changed {
		v.cluster.Workload = w
	}
}

// releaseInView removes a job from the view's GPUs and node.
func (v *view) releaseInView(j *job, node string, gpus []string, jobs map[string]*job) {
	for _, id := range gpus {
		if gs, ok := v.gpus[id]; ok {
			v.dropAlloc(gs.g, j.id, jobs)
		}
	}
	v.releaseNode(j, node)
}

func (v *view) dropAlloc(g *policy.GPU, jobID string, jobs map[string]*job) {
	for i, a := range g.Allocs {
		if a.Owner == jobID {
			g.Allocs = slices.Delete(g.Allocs, i, i+1)
			if j, ok := jobs[jobID]; ok {
				g.Util = max(0, g.Util-j.spec.Util)
			}
			v.rebuildShares(g, jobs)
			return
		}
	}
}

// rebuildShares derives a GPU's shares, and the share of it they hold,
// from its allocations and job records, and tells the view's index.
func (v *view) rebuildShares(g *policy.GPU, jobs map[string]*job) {
	defer v.cluster.Touch(g)
	g.Shares = g.Shares[:0]
	g.MilliUsed = 0
	for _, a := range g.Allocs {
		sh := policy.Share{JobID: a.Owner, VRAM: a.Size, GPUs: 1, Milli: policy.MilliOf(0, a.Size, g.VRAMTotal)}
		if j, ok := jobs[a.Owner]; ok {
			sh.Priority, sh.Preemptible, sh.Util = j.spec.Priority, j.spec.Preemptible, j.spec.Util
			sh.CPUMilli, sh.Memory, sh.GPUs = j.spec.CPUMilli(), int64(j.spec.Memory), j.spec.GPUs
			sh.Milli = policy.MilliOf(j.spec.Milli, int64(j.spec.VRAM), g.VRAMTotal)
			sh.JobType = j.spec.JobType
		}
		g.MilliUsed += sh.Milli
		g.Shares = append(g.Shares, sh)
	}
}

// holdInView applies a placement's reservations to the view at once,
// tentatively: the next decision sees them without waiting for answers.
// Each GPU's offset is the one its actor will choose (the first fit of
// the same layout); the answer corrects it if not.
func (v *view) holdInView(n *negotiation, jobs map[string]*job) {
	for _, c := range n.calls {
		if c.gpu != "" {
			v.holdOn(v.gpus[c.gpu], n.a.job, c.ctl.Job.VRAM, jobs)
		}
	}
	nd := v.nodes[n.place.Node]
	if nd == nil {
		return // a training job's placement holds no node's CPU or memory
	}
	j := n.a.job
	nd.CPUUsedMilli += j.spec.CPUMilli()
	nd.MemUsed += int64(j.spec.Memory)
	v.cluster.TouchNode(nd)
}

// holdOn adds j's allocation of size to a GPU in the view, where its
// actor's first fit puts it.
func (v *view) holdOn(gs *gpuState, j *job, size int64, jobs map[string]*job) {
	g := gs.g
	sortAllocs(g.Allocs)
	off, _ := vram.FirstFit(g.VRAMTotal, v.cluster.VRAMModel, g.Allocs, size)
	g.Allocs = append(g.Allocs, vram.Alloc{Owner: j.id, Offset: off, Size: size})
	sortAllocs(g.Allocs)
	g.Util += j.spec.Util
	v.rebuildShares(g, jobs)
}

// unholdInView takes back a placement's tentative reservations.
func (v *view) unholdInView(n *negotiation, jobs map[string]*job) {
	j := n.a.job
	for _, c := range n.calls {
		if c.gpu != "" {
			if gs, ok := v.gpus[c.gpu]; ok {
				v.dropAlloc(gs.g, j.id, jobs)
			}
		}
	}
	v.releaseNode(j, n.place.Node)
}

// confirmInView makes a placement's reservations final in the view: the
// offsets, layout versions and incarnations its GPUs answered.
func (v *view) confirmInView(n *negotiation, jobs map[string]*job) {
	j := n.a.job
	for i, c := range n.calls {
		if c.gpu == "" {
			continue
		}
		gs := v.gpus[c.gpu]
		g := gs.g
		rep := n.replies[i]
		k := slices.IndexFunc(g.Allocs, func(a vram.Alloc) bool { return a.Owner == j.id })
		if k < 0 {
			// Dropped from the view meanwhile (the GPU was declared dead).
			g.Allocs = append(g.Allocs, vram.Alloc{Owner: j.id, Offset: rep.Offset, Size: c.ctl.Job.VRAM})
			g.Util += j.spec.Util
		} else if g.Allocs[k].Offset != rep.Offset {
			g.Allocs[k].Offset = rep.Offset
		}
		sortAllocs(g.Allocs)
		gs.version = max(gs.version, rep.Version)
		v.rebuildShares(g, jobs)
		if j.incarnations == nil {
			j.incarnations = map[string]int{}
		}
		j.incarnations[c.gpu] = rep.Incarnation
	}
}

// refreshLostWork sets each share's lost work (progress since its last
// checkpoint) to its value now, before victims are chosen, and whether
// stopping its job frees it: only a preemptible job running on that GPU,
// not already being stopped. A share of a job the scheduler stopped or
// placed elsewhere — a stray its GPU has been told to release but still
// holds — is not: chosen as a victim it was skipped (a victim must be
// running), the preemptor's reservation was refused for the room it still
// took, and the two would be tried again at the same instant for ever
// ("insufficient GPU share" at every try).
func (v *view) refreshLostWork(jobs map[string]*job, now time.Time) {
	for _, g := range v.cluster.GPUs {
		for i := range g.Shares {
			sh := &g.Shares[i]
			j, ok := jobs[sh.JobID]
			if !ok {
				sh.Preemptible = false
				continue
			}
			p := j.estimate(now)
			sh.LostWork = p - j.spec.Kept(p)
			sh.Preemptible = j.spec.Preemptible && j.state == stateRunning && j.stopping == nil && slices.Contains(j.gpus, g.ID)
		}
	}
}

// suspect stops placing on a GPU that left a request unanswered (or whose
// supervisor said it is down), until its node reports it alive again (a
// heartbeat) or it speaks: a hung or cut-off GPU would otherwise cost a
// call timeout per attempt. Only the lease declares it dead. True: it was
// alive until now (the caller logs it).
func (v *view) suspect(gpu string) bool {
	gs, ok := v.gpus[gpu]
	if !ok || !gs.g.Alive {
		return false
	}
	gs.g.Alive = false
	v.cluster.Touch(gs.g)
	return true
}
