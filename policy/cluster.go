package policy

import (
	"fmt"
	"math/rand"
	"slices"

	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/vram"
)

// Share is one job's hold on a GPU, as the scheduler's view has it.
type Share struct {
	JobID       string
	Priority    model.Priority
	Preemptible bool
	VRAM        int64
	Util        float64
	// LostWork is the work (reference seconds) the job would lose if stopped
	// now: what it did since its last checkpoint.
	LostWork float64
	// CPUMilli and Memory are the job's host resources on the GPU's node.
	CPUMilli int64
	Memory   int64
	// Milli is the job's share of this GPU in thousandths.
	Milli int
	// GPUs is how many GPUs the job holds (1, or its gang size).
	GPUs int
	// JobType is a typed job's type ("" for any other).
	JobType string
}

// GPU is one GPU in a snapshot.
type GPU struct {
	ID    string
	Node  string
	Model string
	// Index is the GPU's position in cluster order: the "lower GPU id" of every tie-break.
	Index     int
	NodeIndex int
	VRAMTotal int64
	Allocs    []vram.Alloc
	Shares    []Share
	// Util is the summed util of the GPU's jobs (may exceed 100).
	Util float64
	// MilliUsed is the summed share of the GPU its jobs hold, in thousandths.
	MilliUsed int
	Alive     bool
	// Variability is the GPU's pace per application class, as its status
	// says (model.GPUSpec.Variability; nil: none).
	Variability map[string]float64
}

// MilliPerGPU is a whole GPU in the shares jobs reserve (gpu_milli).
const MilliPerGPU = 1000

// MilliFree is the share of the GPU no job holds, in thousandths.
func (g *GPU) MilliFree() int { return MilliPerGPU - g.MilliUsed }

// VRAMUsed is the allocated VRAM.
func (g *GPU) VRAMUsed() int64 {
	var u int64
	for _, a := range g.Allocs {
		u += a.Size
	}
	return u
}

// Node is one node in a snapshot.
type Node struct {
	ID    string
	Index int
	// CPUMilli and CPUUsedMilli are the node's CPU and the CPU its jobs
	// hold, in thousandths of a core (the trace's cpu_milli).
	CPUMilli     int64
	CPUUsedMilli int64
	MemTotal     int64
	MemUsed      int64
	GPUs         []int
	Alive        bool
	// Model is the model of the node's GPUs ("" for a CPU-only node).
	Model string
	// Rank breaks ties between equally scored nodes under the node-scoring
	// policies: the lowest rank wins (the FGD paper's permuted node names).
	Rank int
}

// CPUFree is the CPU no job holds, in thousandths of a core.
func (n *Node) CPUFree() int64 { return n.CPUMilli - n.CPUUsedMilli }

// Cluster is the snapshot a policy decides over. Policies never modify it
// (Memo only caches what they compute from it).
type Cluster struct {
	GPUs      []*GPU
	Nodes     []*Node
	VRAMModel vram.Model
	// Workload is the class distribution fragmentation is measured against
	// (FGD and the fragmentation metrics); nil means no classes.
	Workload *Workload
	// Rand is the seeded source of the policies that draw (random); nil
	// makes them take the first option instead of drawing.
	Rand *rand.Rand
	// Memo, when set, caches node scores across decisions; it checks each
	// node's state itself, so it never serves a stale score.
	Memo *Memo
	// Index, when set, keeps GPUs and nodes in the policies' orders so a
	// decision does not scan the cluster; whoever changes the cluster
	// then Touches what changed (see Index).
	Index *Index
	// Filters are the filters in force (Filter): each must allow a GPU for
	// it to fit.
	Filters []Filter
	// ComputeBound makes a GPU's compute part of the fit: a job goes on a
	// GPU only while the summed util there plus its own stays within
	// UtilLimit. The scheduler sets it under the policies that
	// BindsCapacity.
	ComputeBound bool
	// Oversubscribe is how far past its compute a GPU may be filled: the
	// limit is Oversubscribe × 100 % (1, the default, when zero; +Inf:
	// no limit). It bounds ComputeBound policies and the capacity filter.
	Oversubscribe float64
	// Throughputs, when set, is the cluster's throughput table: a typed
	// job (Request.JobType) fits only a GPU whose model the table gives
	// it a rate on, and a GPU holding a typed job is shared only by the
	// pair the table measured (ThroughputRule).
	Throughputs *model.ThroughputTable
}

// scans reports whether a placement must look at every GPU: a filter or
// the throughput table's rule is in force, which the index and the memo
// cannot know.
func (c *Cluster) scans() bool { return len(c.Filters) > 0 || c.Throughputs != nil }

// UtilLimit is the summed utilisation, in percent, past which a GPU has no
// compute to spare: 100 × Oversubscribe.
func (c *Cluster) UtilLimit() float64 {
	if c.Oversubscribe > 0 {
		return 100 * c.Oversubscribe
	}
	return 100
}

// CheckOversubscribe checks an oversubscription ratio: at least 1 (a GPU
// always takes one job at 100 %), +Inf for no limit.
func CheckOversubscribe(ratio float64) error {
	if !(ratio >= 1) {
		return fmt.Errorf("must be at least 1 (1: no GPU past 100 %% of its compute; 2: up to 200 %%; inf: no limit), not %g", ratio)
	}
	return nil
}

// utilSlack absorbs a sum's rounding in the compute test (three jobs of
// 33.3…% fill a GPU, not more).
const utilSlack = 1e-9

// ComputeFits reports whether g's compute has room for r's util within
// UtilLimit (whether or not the compute bound is in force).
func (c *Cluster) ComputeFits(g *GPU, r *Request) bool { return c.utilFits(g.Util, r) }

// utilFits is the compute test on a GPU whose jobs sum to util: the one
// formula the fit, the victims (util less theirs) and the index (a
// subtree's least util) all apply.
func (c *Cluster) utilFits(util float64, r *Request) bool {
	return util+r.Util <= c.UtilLimit()+utilSlack
}

// LargestFree is the largest allocation the GPU can take now.
func (c *Cluster) LargestFree(g *GPU) int64 {
	return vram.LargestFree(g.VRAMTotal, c.VRAMModel, g.Allocs, nil)
}

// Request is what a job asks of the cluster.
type Request struct {
	JobID    string
	Priority model.Priority
	// GPUs is 0 (CPU-only), 1, or a gang size on one node.
	GPUs int
	// VRAM is needed on each GPU; 0 with Milli set means Milli's share of
	// each GPU's VRAM (a trace pod names no VRAM).
	VRAM int64
	// Milli is the share of each GPU the job reserves, in thousandths
	// (gpu_milli); 0 means the share its VRAM takes of the GPU.
	Milli    int
	Util     float64
	CPUMilli int64
	Memory   int64
	Models   []string
	// PinGPU and PinNode restrict the job to one GPU or one node.
	PinGPU, PinNode string
	// Held marks GPUs held for an older job: the request may not use them.
	Held map[int]bool
	// JobType is a typed job's type (events.Job.JobType; "" for any other).
	JobType string
}

// Placement is one way to place a request: a node and the GPUs on it.
type Placement struct {
	Node    string
	NodeIdx int
	GPUs    []string
	GPUIdx  []int
	Score   float64
}

func (r *Request) allowsModel(m string) bool {
	return len(r.Models) == 0 || slices.Contains(r.Models, m)
}

// VRAMOn is the VRAM the request needs on g.
func (r *Request) VRAMOn(g *GPU) int64 {
	if r.VRAM > 0 || r.Milli == 0 {
		return r.VRAM
	}
	return int64(r.Milli) * g.VRAMTotal / MilliPerGPU
}

// MilliOn is the share of g the request reserves, in thousandths: its
// gpu_milli, or else the fraction of g's VRAM it takes, rounded down (so
// shares derived from VRAM that fit the VRAM also fit the 1000).
func (r *Request) MilliOn(g *GPU) int {
	return MilliOf(r.Milli, r.VRAM, g.VRAMTotal)
}

// MilliOf is the share, in thousandths, of a GPU with vramTotal that a job
// asking milli and vram holds: milli when given, else its VRAM's fraction.
func MilliOf(milli int, vram, vramTotal int64) int {
	if milli > 0 || vramTotal <= 0 {
		return milli
	}
	return int(vram * MilliPerGPU / vramTotal)
}

// Whole reports whether the request takes whole GPUs (or none) rather than
// a share of one.
func (r *Request) Whole(g *GPU) bool { return r.GPUs != 1 || r.MilliOn(g) >= MilliPerGPU }

// Eligible reports whether g could ever take the request: alive, an allowed
// model, matching the pins and large enough when empty.
func (r *Request) Eligible(g *GPU) bool {
	return g.Alive && r.allowsModel(g.Model) && (r.PinGPU == "" || r.PinGPU == g.ID) &&
		(r.PinNode == "" || r.PinNode == g.Node) && g.VRAMTotal >= r.VRAMOn(g)
}

// NodeFits reports whether the node has the CPU and memory the request needs.
func (r *Request) NodeFits(n *Node) bool {
	return n.Alive && n.CPUFree() >= r.CPUMilli && n.MemTotal-n.MemUsed >= r.Memory &&
		(r.PinNode == "" || r.PinNode == n.ID)
}

// Fits is the filter stage: the request fits g now (VRAM by the cluster's
// VRAM model, its share of the GPU, not held) and g's node has room.
func (c *Cluster) Fits(g *GPU, r *Request) bool {
	return c.GPUFits(g, r) && r.NodeFits(c.Nodes[g.NodeIndex])
}

// GPUFits is Fits without the node's CPU and memory.
func (c *Cluster) GPUFits(g *GPU, r *Request) bool {
	if !c.roomFor(g, r) {
		return false
	}
	ok, _ := c.allowed(g, r)
	return ok
}

// roomFor is GPUFits without the filters in force.
func (c *Cluster) roomFor(g *GPU, r *Request) bool {
	if !r.Eligible(g) || r.Held[g.Index] || g.MilliFree() < r.MilliOn(g) ||
		(c.ComputeBound && !c.ComputeFits(g, r)) {
		return false
	}
	need := r.VRAMOn(g)
	if need <= 0 {
		return true
	}
	if free := g.VRAMTotal - g.VRAMUsed(); free < need {
		return false
	} else if c.VRAMModel == vram.Pooled || packed(g.Allocs) {
		return true
	}
	return c.LargestFree(g) >= need
}

// packed reports whether allocations sit end to end from offset 0 (no
// holes), so the free VRAM is one block at the end.
func packed(allocs []vram.Alloc) bool {
	var at int64
	for _, a := range allocs {
		if a.Offset != at {
			return false
		}
		at += a.Size
	}
	return true
}
