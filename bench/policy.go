package bench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/replay"
	"github.com/gpusched/gpusched/vram"
)

// RandomCluster is n A100-80GB GPUs on 8-GPU nodes, each GPU with 0–3
// seeded random jobs of 1–20 GiB, and a workload of four classes (for
// fgd), with an Index when indexed.
func RandomCluster(n int, seed uint64, indexed bool) *policy.Cluster {
	rng := rand.New(rand.NewPCG(seed, 1))
	c := &policy.Cluster{VRAMModel: vram.Contiguous, Memo: policy.NewMemo(),
		Workload: &policy.Workload{Classes: []policy.Class{{GPUs: 1, Milli: 125, CPUMilli: 4000, P: 0.5},
			{GPUs: 1, Milli: 500, CPUMilli: 8000, P: 0.3}, {GPUs: 1, Milli: 1000, CPUMilli: 8000, P: 0.1}, {GPUs: 2, Milli: 1000, CPUMilli: 16000, P: 0.1}}}}
	if indexed {
		c.Index = policy.NewIndex()
	}
	for i := 0; i < n; i++ {
		if i%8 == 0 {
			c.Nodes = append(c.Nodes, &policy.Node{ID: "node-" + strconv.Itoa(i/8), Index: i / 8, CPUMilli: 128000,
				MemTotal: int64(1 * model.TiB), Alive: true, Model: "A100-80GB", Rank: rng.IntN(1 << 30)})
		}
		g := &policy.GPU{ID: "gpu-" + strconv.Itoa(i), Node: c.Nodes[i/8].ID, Model: "A100-80GB", Index: i, NodeIndex: i / 8,
			VRAMTotal: int64(80 * model.GiB), Alive: true}
		c.Nodes[i/8].GPUs = append(c.Nodes[i/8].GPUs, i)
		c.GPUs = append(c.GPUs, g)
		for k := rng.IntN(4); k > 0; k-- {
			r := &policy.Request{GPUs: 1, VRAM: int64(1+rng.IntN(20)) * int64(model.GiB), Util: 20}
			land(c, r, g, fmt.Sprintf("j%d-%d", i, k))
		}
	}
	return c
}

// land puts job id of r on g (and its node) as the scheduler's view does.
func land(c *policy.Cluster, r *policy.Request, g *policy.GPU, id string) {
	n := c.Nodes[g.NodeIndex]
	n.CPUUsedMilli += r.CPUMilli
	n.MemUsed += r.Memory
	size := r.VRAMOn(g)
	g.Allocs = append(g.Allocs, vram.Alloc{Owner: id, Offset: g.VRAMUsed(), Size: size})
	g.MilliUsed += r.MilliOn(g)
	g.Util += r.Util
	g.Shares = append(g.Shares, policy.Share{JobID: id, VRAM: size, Util: r.Util, Milli: r.MilliOn(g), Priority: 1, Preemptible: true, GPUs: 1,
		CPUMilli: r.CPUMilli, Memory: r.Memory})
	c.TouchNode(n)
	c.Touch(g)
}

// lift removes job id of r from g (and its node).
func lift(c *policy.Cluster, r *policy.Request, g *policy.GPU, id string) {
	for k, a := range g.Allocs {
		if a.Owner != id {
			continue
		}
		g.Allocs = slices.Delete(g.Allocs, k, k+1)
		g.MilliUsed -= g.Shares[k].Milli
		g.Util -= g.Shares[k].Util
		g.Shares = slices.Delete(g.Shares, k, k+1)
		n := c.Nodes[g.NodeIndex]
		n.CPUUsedMilli -= r.CPUMilli
		n.MemUsed -= r.Memory
		c.TouchNode(n)
		c.Touch(g)
		return
	}
}

// Cost is the mean cost of one decision.
type Cost struct {
	PerDecision time.Duration
	Allocs      float64
}

// DecisionCost runs decisions decisions of policy name on c, the way a
// scheduler makes them: each places a job of 1–16 GiB (one of four sizes,
// so classes repeat) on the best GPU, and the oldest of the jobs it
// placed ends once 64 (on 8 GPUs, 16) are running, so every decision sees the last
// ones' changes. It returns the mean time and allocations per decision.
func DecisionCost(c *policy.Cluster, name string, decisions int) (Cost, error) {
	p, err := policy.Lookup[policy.Policy](name)
	if err != nil {
		return Cost{}, err
	}
	reqs := []*policy.Request{
		{GPUs: 1, VRAM: int64(1 * model.GiB), Util: 10, CPUMilli: 1000, Memory: int64(4 * model.GiB)},
		{GPUs: 1, VRAM: int64(4 * model.GiB), Util: 20, CPUMilli: 1000, Memory: int64(4 * model.GiB)},
		{GPUs: 1, VRAM: int64(10 * model.GiB), Util: 30, CPUMilli: 2000, Memory: int64(8 * model.GiB)},
		{GPUs: 1, VRAM: int64(16 * model.GiB), Util: 40, CPUMilli: 2000, Memory: int64(8 * model.GiB)},
	}
	type placed struct {
		r  *policy.Request
		g  *policy.GPU
		id string
	}
	var fifo []placed
	one := func(i int) error {
		r := reqs[i%len(reqs)]
		ps := policy.Place(c, r, p)
		if len(ps) == 0 {
			return fmt.Errorf("%s placed nothing at decision %d", name, i)
		}
		id := "bench-" + strconv.Itoa(i)
		g := c.GPUs[ps[0].GPUIdx[0]]
		land(c, r, g, id)
		fifo = append(fifo, placed{r, g, id})
		if len(fifo) > min(64, 2*len(c.GPUs)) {
			lift(c, fifo[0].r, fifo[0].g, fifo[0].id)
			fifo = fifo[1:]
		}
		return nil
	}
	// Warm up (the index is built at the first decision, caches fill).
	for i := 0; i < min(decisions/10+1, 100); i++ {
		if err := one(i); err != nil {
			return Cost{}, err
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for i := 0; i < decisions; i++ {
		if err := one(i); err != nil {
			return Cost{}, err
		}
	}
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return Cost{PerDecision: took / time.Duration(decisions), Allocs: float64(after.Mallocs-before.Mallocs) / float64(decisions)}, nil
}

// ReplayDecisions replays plan offline under policy name and returns the
// mean time of a decision (Place alone, index upkeep included; applying
// and measuring fragmentation excluded).
func ReplayDecisions(plan *replay.Plan, name string, indexed bool) (time.Duration, error) {
	p, err := policy.Lookup[policy.Policy](name)
	if err != nil {
		return 0, err
	}
	m := replay.NewMirror(plan)
	if !indexed {
		m.Cluster.Index = nil
	}
	var spent time.Duration
	for i := range plan.Pods {
		pod := &plan.Pods[i]
		t0 := time.Now()
		pl, ok := m.Place(pod, p)
		spent += time.Since(t0)
		if !ok {
			pl = policy.Placement{}
		}
		if err := m.Apply(pod, pl.Node, pl.GPUs); err != nil {
			return 0, err
		}
	}
	return spent / time.Duration(len(plan.Pods)), nil
}
