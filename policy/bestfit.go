package policy

// bestFit is the FGD paper's BestFit (POLICIES.md §2): the node left with
// the least free resources after placement wins. Its raw score is
// trunc(100·(1 − s)), s = ½(C − c)/128000 + ½(R − k·g)/8000 (each
// dimension normalised by the largest node, weighted equally); raw scores
// are then min-max normalised over the feasible nodes to 0..100 with
// integer division (all equal: all 0), as the simulator does.
// GPUs: the "best" choice.
type bestFit struct{}

func init() { Register(bestFit{}) }

func (bestFit) Name() string { return "best-fit" }

func (bestFit) ScoreNodes(c *Cluster, r *Request, feasible []*Node, scores []int) {
	lo, hi := 0, 0
	for i, n := range feasible {
		s := 0.5*float64(n.CPUFree()-r.CPUMilli)/maxCPUMilli + 0.5*float64(c.nodeFree(n)-c.demand(r, n))/maxGPUMilli
		scores[i] = int(100 * (1 - s))
		if i == 0 || scores[i] < lo {
			lo = scores[i]
		}
		if i == 0 || scores[i] > hi {
			hi = scores[i]
		}
	}
	for i := range scores {
		if hi == lo {
			scores[i] = 0
		} else {
			scores[i] = (scores[i] - lo) * 100 / (hi - lo)
		}
	}
}

func (bestFit) PickGPUs(c *Cluster, r *Request, n *Node) []int { return c.bestShare(r, n) }
