package policy

// gpuClustering is the FGD paper's GpuClustering (POLICIES.md §2): jobs of
// one kind gather on the same nodes. A CPU-only job scores 0 everywhere.
// Otherwise the base is ⌊25·(8000 − R)/8000⌋ (R the node's free GPU share,
// 8000 for every node size, so fuller nodes score up to 25 more), plus a
// bonus: 75 if the node hosts jobs of the request's kind and no other, 50
// if it hosts that kind and others, 25 if it hosts no GPU job, 0 if only
// other kinds. Kinds: a GPU share, 1 GPU, and each gang size.
// GPUs: the "best" choice.
type gpuClustering struct{}

func init() { Register[Policy](gpuClustering{}) }

func (gpuClustering) Name() string { return "gpu-clustering" }

// jobKind is a job's kind for clustering: 0 for a share of one GPU, else
// its GPU count.
func jobKind(gpus, milli int) int {
	if gpus == 1 && milli < MilliPerGPU {
		return 0
	}
	return gpus
}

func (gpuClustering) ScoreNodes(c *Cluster, r *Request, feasible []*Node, scores []int) {
	if r.GPUs == 0 {
		return
	}
	for i, n := range feasible {
		kind := jobKind(r.GPUs, r.MilliOn(c.GPUs[n.GPUs[0]]))
		same, other := false, false
		for _, gi := range n.GPUs {
			for _, s := range c.GPUs[gi].Shares {
				if jobKind(s.GPUs, s.Milli) == kind {
					same = true
				} else {
					other = true
				}
			}
		}
		bonus := 0
		switch {
		case same && !other:
			bonus = 75
		case same:
			bonus = 50
		case !other:
			bonus = 25
		}
		scores[i] = 25*(maxGPUMilli-c.nodeFree(n))/maxGPUMilli + bonus
	}
}

func (gpuClustering) PickGPUs(c *Cluster, r *Request, n *Node) []int { return c.bestShare(r, n) }
