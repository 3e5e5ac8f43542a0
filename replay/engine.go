package replay

import (
	"fmt"
	"math/rand"
	"strconv"

	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/openb"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/vram"
)

// Mirror is a cluster state a replay's placements are applied to and its
// measures taken from: the offline run places and applies with it; the
// live run applies what the scheduler actor placed.
type Mirror struct {
	Cluster *policy.Cluster
	byName  map[string]*policy.Node
	gpuByID map[string]int
	// nodeFrag is each node's F_n(M), kept current as pods land.
	nodeFrag []float64
	frag     float64
	used     int64
	arrived  int64
	events   []Event
	jobs     int
}

// Event is the cluster's measures after one submitted pod (placed or not):
// the FGD simulator's per-pod log line.
type Event struct {
	ArrivedMilli int64
	UsedMilli    int64
	// Frag is F(M) in thousandths; FreeMilli the idle GPU share.
	Frag      float64
	FreeMilli int64
	Placed    bool
}

// NewMirror builds the empty cluster of a plan: nodes in name order with
// their ranks, GPUs numbered gpu-0… in node order (as openb.Shape names
// them), the plan's workload, and a seeded source for random.
func NewMirror(plan *Plan) *Mirror {
	m := &Mirror{byName: map[string]*policy.Node{}, gpuByID: map[string]int{}}
	c := &policy.Cluster{VRAMModel: vram.Contiguous, Workload: plan.Workload, Rand: rand.New(rand.NewSource(plan.PolicySeed)), Memo: policy.NewMemo(),
		Index: policy.NewIndex()}
	for i, n := range plan.Nodes {
		node := &policy.Node{ID: n.Name, Index: i, CPUMilli: n.CPUMilli, MemTotal: n.MemoryMiB * int64(model.MiB),
			Alive: true, Model: n.Model, Rank: plan.Rank[n.Name]}
		var vramTotal int64
		if n.GPUs > 0 {
			gm, _ := model.LookupModel(n.Model)
			vramTotal = int64(gm.VRAM)
		}
		for range n.GPUs {
			g := &policy.GPU{ID: "gpu-" + strconv.Itoa(len(c.GPUs)), Node: n.Name, Model: n.Model, Index: len(c.GPUs),
				NodeIndex: i, VRAMTotal: vramTotal, Alive: true}
			m.gpuByID[g.ID] = g.Index
			node.GPUs = append(node.GPUs, g.Index)
			c.GPUs = append(c.GPUs, g)
		}
		c.Nodes = append(c.Nodes, node)
		m.byName[n.Name] = node
	}
	m.Cluster = c
	m.nodeFrag = make([]float64, len(c.Nodes))
	for i, n := range c.Nodes {
		m.nodeFrag[i] = c.NodeFragmentation(n)
		m.frag += m.nodeFrag[i]
	}
	return m
}

// Request is the placement request of a pod: its CPU, memory, GPU count,
// share and allowed models; VRAM follows from the share on each GPU.
func Request(p *openb.Pod, id string) *policy.Request {
	return &policy.Request{JobID: id, Priority: model.PriorityMedium, GPUs: p.GPUs, Milli: p.Milli, Util: float64(p.Milli) / 10,
		CPUMilli: p.CPUMilli, Memory: p.MemoryMiB * int64(model.MiB), Models: p.Models}
}

// Place decides where pod goes under pol, without applying it; ok is false
// when it fits nowhere.
func (m *Mirror) Place(p *openb.Pod, pol policy.Policy) (policy.Placement, bool) {
	ps := policy.Place(m.Cluster, Request(p, ""), pol)
	if len(ps) == 0 {
		return policy.Placement{}, false
	}
	return ps[0], true
}

// Apply lands pod on node with the given GPUs (ids) and records the event;
// an empty node records a pod that fit nowhere.
func (m *Mirror) Apply(p *openb.Pod, node string, gpus []string) error {
	m.arrived += p.GPUMilli()
	if node == "" {
		m.record(false)
		return nil
	}
	n, ok := m.byName[node]
	if !ok {
		return fmt.Errorf("pod %s placed on unknown node %q", p.Name, node)
	}
	if len(gpus) != p.GPUs {
		return fmt.Errorf("pod %s needs %d GPUs, placed on %d", p.Name, p.GPUs, len(gpus))
	}
	m.jobs++
	id := "job-" + strconv.Itoa(m.jobs)
	r := Request(p, id)
	n.CPUUsedMilli += p.CPUMilli
	n.MemUsed += r.Memory
	m.Cluster.TouchNode(n)
	if n.CPUUsedMilli > n.CPUMilli || n.MemUsed > n.MemTotal {
		return fmt.Errorf("pod %s overcommits node %s (CPU %d/%d, memory %d/%d)", p.Name, node, n.CPUUsedMilli, n.CPUMilli, n.MemUsed, n.MemTotal)
	}
	for _, id := range gpus {
		gi, ok := m.gpuByID[id]
		if !ok || m.Cluster.GPUs[gi].Node != node {
			return fmt.Errorf("pod %s placed on GPU %q, not on node %s", p.Name, id, node)
		}
		g := m.Cluster.GPUs[gi]
		size := r.VRAMOn(g)
		g.Allocs = append(g.Allocs, vram.Alloc{Owner: r.JobID, Offset: g.VRAMUsed(), Size: size})
		g.MilliUsed += p.Milli
		g.Util += r.Util
		g.Shares = append(g.Shares, policy.Share{JobID: r.JobID, Priority: r.Priority, VRAM: size, Util: r.Util,
			CPUMilli: p.CPUMilli, Memory: r.Memory, Milli: p.Milli, GPUs: p.GPUs})
		m.Cluster.Touch(g)
		if g.MilliUsed > policy.MilliPerGPU {
			return fmt.Errorf("pod %s overcommits %s (%d/1000)", p.Name, id, g.MilliUsed)
		}
		m.used += int64(p.Milli)
	}
	m.frag -= m.nodeFrag[n.Index]
	m.nodeFrag[n.Index] = m.Cluster.NodeFragmentation(n)
	m.frag += m.nodeFrag[n.Index]
	m.record(true)
	return nil
}

func (m *Mirror) record(placed bool) {
	m.events = append(m.events, Event{ArrivedMilli: m.arrived, UsedMilli: m.used, Frag: m.frag,
		FreeMilli: int64(len(m.Cluster.GPUs))*policy.MilliPerGPU - m.used, Placed: placed})
}

// Events is the log of measures, one per submitted pod.
func (m *Mirror) Events() []Event { return m.events }

// Placement is where one pod went: its node and GPUs, or nothing.
type Placement struct {
	Node string
	GPUs []string
}

// Offline runs a plan under pol on the pure core: each pod placed and
// applied in arrival order, nothing departs, a pod that fits nowhere is
// dropped. progress, when set, is called after each pod.
func Offline(plan *Plan, pol policy.Policy, progress func(done int)) ([]Placement, *Mirror, error) {
	m := NewMirror(plan)
	out := make([]Placement, len(plan.Pods))
	for i := range plan.Pods {
		p := &plan.Pods[i]
		pl, ok := m.Place(p, pol)
		if ok {
			out[i] = Placement{Node: pl.Node, GPUs: pl.GPUs}
		}
		if err := m.Apply(p, out[i].Node, out[i].GPUs); err != nil {
			return nil, nil, err
		}
		if progress != nil {
			progress(i + 1)
		}
	}
	return out, m, nil
}
