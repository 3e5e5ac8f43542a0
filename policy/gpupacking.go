package policy

// gpuPacking is the FGD paper's GpuPacking (POLICIES.md §2): prefer a
// partly used GPU, then a partly used node, then an empty node. A CPU-only
// job scores 0. A node with every GPU free scores 33 − G (G its GPUs, so
// smaller empty nodes first). Otherwise the GPUs the job would take are the
// fitting ones in ascending free share: if any is fully free the score is
// max(50 − fully free GPUs taken, 33); if the job shares a used GPU with r
// free, 100 − ⌊r/100⌋ (the fuller the GPU, the higher).
// GPUs: the "best" choice.
type gpuPacking struct{}

func init() { Register[Policy](gpuPacking{}) }

func (gpuPacking) Name() string { return "gpu-packing" }

func (gpuPacking) ScoreNodes(c *Cluster, r *Request, feasible []*Node, scores []int) {
	if r.GPUs == 0 {
		return
	}
	for i, n := range feasible {
		if c.nodeFree(n) == MilliPerGPU*len(n.GPUs) {
			scores[i] = 33 - len(n.GPUs)
			continue
		}
		take := c.ascendingFree(r, n)
		take = take[:min(len(take), r.GPUs)]
		whole := 0
		for _, gi := range take {
			if c.GPUs[gi].MilliFree() == MilliPerGPU {
				whole++
			}
		}
		if whole > 0 {
			scores[i] = max(50-whole, 33)
			continue
		}
		free := c.GPUs[take[0]].MilliFree()
		scores[i] = max(100-(100*free/MilliPerGPU)/10, 50)
	}
}

func (gpuPacking) PickGPUs(c *Cluster, r *Request, n *Node) []int { return c.bestShare(r, n) }
