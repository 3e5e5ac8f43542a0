package policy

import (
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
	// CPU and Memory are the job's host resources on the GPU's node.
	CPU    float64
	Memory int64
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
	Util  float64
	Alive bool
}

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
	ID       string
	Index    int
	CPUTotal float64
	CPUUsed  float64
	MemTotal int64
	MemUsed  int64
	GPUs     []int
	Alive    bool
}

// Cluster is the snapshot a policy decides over. Policies never modify it.
type Cluster struct {
	GPUs      []*GPU
	Nodes     []*Node
	VRAMModel vram.Model
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
	GPUs   int
	VRAM   int64
	Util   float64
	CPU    float64
	Memory int64
	Models []string
	// PinGPU and PinNode restrict the job to one GPU or one node.
	PinGPU, PinNode string
	// Held marks GPUs held for an older job: the request may not use them.
	Held map[int]bool
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

// Eligible reports whether g could ever take the request: alive, an allowed
// model, matching the pins and large enough when empty.
func (r *Request) Eligible(g *GPU) bool {
	return g.Alive && r.allowsModel(g.Model) && (r.PinGPU == "" || r.PinGPU == g.ID) &&
		(r.PinNode == "" || r.PinNode == g.Node) && g.VRAMTotal >= r.VRAM
}

// NodeFits reports whether the node has the CPU and memory the request needs.
func (r *Request) NodeFits(n *Node) bool {
	return n.Alive && n.CPUTotal-n.CPUUsed >= r.CPU-1e-9 && n.MemTotal-n.MemUsed >= r.Memory &&
		(r.PinNode == "" || r.PinNode == n.ID)
}

// Fits is the filter stage: the request fits g now (VRAM by the cluster's
// VRAM model, not held) and g's node has room.
func (c *Cluster) Fits(g *GPU, r *Request) bool {
	return r.Eligible(g) && !r.Held[g.Index] && c.LargestFree(g) >= r.VRAM && r.NodeFits(c.Nodes[g.NodeIndex])
}
