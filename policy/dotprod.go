package policy

// dotprod is the FGD paper's DotProd (POLICIES.md §2): the node whose free
// (CPU, GPU) vector points least along the request's scores highest,
//
//	trunc(100·(1 − ½·[(C/128000)·(c/128000) + (R/8000)·(k·g/8000)]))
//
// with C and R the node's free CPU and GPU share before placement, c and
// k·g the request's; the ½ keeps the sum of two unit products on 0..1.
// GPUs: the "best" choice (tightest fitting share).
type dotprod struct{}

func init() { Register[Policy](dotprod{}) }

func (dotprod) Name() string { return "dotprod" }

func (dotprod) ScoreNodes(c *Cluster, r *Request, feasible []*Node, scores []int) {
	for i, n := range feasible {
		C := float64(n.CPUFree()) / maxCPUMilli
		R := float64(c.nodeFree(n)) / maxGPUMilli
		cpu := float64(r.CPUMilli) / maxCPUMilli
		gpu := float64(c.demand(r, n)) / maxGPUMilli
		scores[i] = int(100 * (1 - 0.5*(C*cpu+R*gpu)))
	}
}

func (dotprod) PickGPUs(c *Cluster, r *Request, n *Node) []int { return c.bestShare(r, n) }
