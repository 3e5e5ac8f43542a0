package policy

// random is the FGD paper's Random baseline (POLICIES.md §2): one feasible
// node drawn uniformly scores 100 and every other 0; a sharing job takes a
// GPU drawn uniformly among those it fits on, whole-GPU jobs the
// lowest-index free GPUs. Draws come from the cluster's seeded source.
type random struct{}

func init() { Register[Policy](random{}) }

func (random) Name() string { return "random" }

func (random) ScoreNodes(c *Cluster, _ *Request, feasible []*Node, scores []int) {
	scores[draw(c, len(feasible))] = 100
}

func (random) PickGPUs(c *Cluster, r *Request, n *Node) []int {
	if r.GPUs != 1 {
		return c.lowestWhole(r, n)
	}
	fit := c.fitting(n, r, nil)
	if len(fit) == 0 {
		return nil
	}
	if r.Whole(c.GPUs[fit[0]]) {
		return fit[:1]
	}
	return []int{fit[draw(c, len(fit))]}
}

// draw is a uniform index below n from the cluster's source (0 without one).
func draw(c *Cluster, n int) int {
	if c.Rand == nil || n <= 1 {
		return 0
	}
	return c.Rand.Intn(n)
}
