package policy

import (
	"math/rand"
	"slices"

	"github.com/gpusched/gpusched/vram"
)

// Round is the periodic re-allocation extension point, for policies that
// time-slice the cluster: every round (`--round`, simulated time) it sees
// every job that runs or waits, in the order of the queue order in force,
// and names the running jobs to stop. They are preempted through the same
// protocol as any preemption (each keeps its progress up to its last
// checkpoint and goes back to the queue), and the scheduling pass that
// follows places the queue in order.
type Round interface {
	Plugin
	// Stop names the running jobs to stop. c is the cluster now (Stop must
	// not change it: work on a copy, scratch(c)), jobs every running and waiting
	// job in queue order, place the placement policy in force.
	Stop(c *Cluster, jobs []RoundJob, place Policy) []string
}

// RoundJob is a job as a round sees it: its request, and where it runs.
type RoundJob struct {
	Request     *Request
	Running     bool
	Preemptible bool
	// Node and GPUs are where a running job runs (GPUs by cluster index).
	Node string
	GPUs []int
}

// DefaultRound is the round of `--round` when none is named.
const DefaultRound = "skip-fit"

var _ = DeclarePoint[Round]("round", DefaultRound, nil)

func init() { Register[Round](skipFit{}) }

// skipFit is Tiresias's admission in queue order (MODEL.md §6 step 4,
// ../shared/traces/pollux) made placement-aware: on a scratch copy of the
// cluster with every preemptible running job lifted, visit the jobs in
// queue order; a waiting job that the placement policy can place is
// placed there, a running job that still fits where it runs is put back,
// and a running job that no longer fits (jobs ahead of it took its room)
// is stopped. A job that does not fit does not block the ones behind it.
// Counting placements rather than GPUs, it stops a job only when a job
// ahead of it can really use the room (GPU shares, VRAM holes, one node's
// GPUs for a gang): on whole-GPU jobs of one node size it is Tiresias's
// rule. Jobs that cannot be stopped keep their place.
type skipFit struct{}

func (skipFit) Name() string { return DefaultRound }

func (skipFit) Stop(c *Cluster, jobs []RoundJob, place Policy) []string {
	s := scratch(c)
	for i := range jobs {
		if j := &jobs[i]; j.Running && j.Preemptible {
			s.lift(j.Request, j.GPUs, j.Node)
		}
	}
	var stop []string
	for i := range jobs {
		j := &jobs[i]
		switch {
		case j.Running && !j.Preemptible:
		case j.Running:
			if !s.fitsWhere(j.Request, j.GPUs, j.Node) {
				stop = append(stop, j.Request.JobID)
				continue
			}
			s.land(j.Request, j.GPUs, j.Node)
		default:
			if ps := Place(s, j.Request, place); len(ps) > 0 {
				s.land(j.Request, ps[0].GPUIdx, ps[0].Node)
			}
		}
	}
	return stop
}

// scratch is a copy of c a round may change: GPUs, nodes and their
// allocations copied, no index and no memo (decisions scan it), and a
// source of draws of its own (seeded, so a round repeats).
func scratch(c *Cluster) *Cluster {
	s := &Cluster{VRAMModel: c.VRAMModel, Workload: c.Workload, Rand: rand.New(rand.NewSource(int64(len(c.GPUs))))}
	s.GPUs = make([]*GPU, len(c.GPUs))
	for i, g := range c.GPUs {
		cp := *g
		cp.Allocs, cp.Shares = slices.Clone(g.Allocs), slices.Clone(g.Shares)
		s.GPUs[i] = &cp
	}
	s.Nodes = make([]*Node, len(c.Nodes))
	for i, n := range c.Nodes {
		cp := *n
		s.Nodes[i] = &cp
	}
	return s
}

// node finds a node by id.
func (c *Cluster) node(id string) *Node {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// lift takes r's job off the GPUs (by index) and the node it holds.
func (c *Cluster) lift(r *Request, gpus []int, node string) {
	for _, gi := range gpus {
		g := c.GPUs[gi]
		g.Allocs = slices.DeleteFunc(g.Allocs, func(a vram.Alloc) bool { return a.Owner == r.JobID })
		g.Shares = slices.DeleteFunc(g.Shares, func(sh Share) bool {
			if sh.JobID != r.JobID {
				return false
			}
			g.Util -= sh.Util
			g.MilliUsed -= sh.Milli
			return true
		})
	}
	if n := c.node(node); n != nil {
		n.CPUUsedMilli -= r.CPUMilli
		n.MemUsed -= r.Memory
	}
}

// fitsWhere reports whether r fits on those GPUs of node now.
func (c *Cluster) fitsWhere(r *Request, gpus []int, node string) bool {
	n := c.node(node)
	if n == nil || n.CPUFree() < r.CPUMilli || n.MemTotal-n.MemUsed < r.Memory {
		return false
	}
	for _, gi := range gpus {
		if !c.GPUFits(c.GPUs[gi], r) {
			return false
		}
	}
	return true
}

// land puts r on those GPUs of node: its VRAM first-fit in each GPU's
// layout, its share, util, CPU and memory.
func (c *Cluster) land(r *Request, gpus []int, node string) {
	for _, gi := range gpus {
		g := c.GPUs[gi]
		size := r.VRAMOn(g)
		at, _ := vram.FirstFit(g.VRAMTotal, c.VRAMModel, g.Allocs, size)
		g.Allocs = append(g.Allocs, vram.Alloc{Owner: r.JobID, Offset: at, Size: size})
		slices.SortFunc(g.Allocs, func(a, b vram.Alloc) int { return int(a.Offset - b.Offset) })
		milli := r.MilliOn(g)
		g.Util += r.Util
		g.MilliUsed += milli
		g.Shares = append(g.Shares, Share{JobID: r.JobID, Priority: r.Priority, VRAM: size, Util: r.Util,
			CPUMilli: r.CPUMilli, Memory: r.Memory, Milli: milli, GPUs: len(gpus)})
	}
	if n := c.node(node); n != nil {
		n.CPUUsedMilli += r.CPUMilli
		n.MemUsed += r.Memory
	}
}
