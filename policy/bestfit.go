package policy

// bestFit is the FGD paper's BestFit (POLICIES.md §2): the node left with
// the least free resources after placement wins. Its raw score is
// trunc(100·(1 − s)), s = ½(C − c)/128000 + ½(R − k·g)/8000 (each
// dimension normalised by the largest node, weighted equally); raw scores
// are then min-max normalised over the feasible nodes to 0..100 with
// integer division (all equal: all 0), as the simulator does.
// GPUs: the "best" choice.
type bestFit struct{}

func init() { Register[Policy](bestFit{}) }

func (bestFit) Name() string { return "best-fit" }

func (b bestFit) ScoreNodes(c *Cluster, r *Request, feasible []*Node, scores []int) {
	lo, hi := 0, 0
	for i, n := range feasible {
		scores[i] = b.RawScore(c, r, n)
		if i == 0 || scores[i] < lo {
			lo = scores[i]
		}
		if i == 0 || scores[i] > hi {
			hi = scores[i]
		}
	}
	for i := range scores {
		scores[i] = b.Normalise(scores[i], hi, lo)
	}
}

// RawScore is trunc(100·(1 − s)) for node n.
func (bestFit) RawScore(c *Cluster, r *Request, n *Node) int {
	s := 0.5*float64(n.CPUFree()-r.CPUMilli)/maxCPUMilli + 0.5*float64(c.nodeFree(n)-c.demand(r, n))/maxGPUMilli
	return int(100 * (1 - s))
}

// Normalise is the min-max normalisation to 0..100 (all equal: all 0).
func (bestFit) Normalise(raw, hi, lo int) int {
	if hi == lo {
		return 0
	}
	return (raw - lo) * 100 / (hi - lo)
}

func (bestFit) PickGPUs(c *Cluster, r *Request, n *Node) []int { return c.bestShare(r, n) }
