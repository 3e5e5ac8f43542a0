package model

// GangSlowdown is how much slower than its nominal pace a gang runs on
// GPUs whose own multipliers (each GPU's measured iteration-time factor
// for the job's kind of work; 1 is the median GPU) are multipliers and
// whose nodes are nodes, one per GPU in the same order: the slowest GPU
// sets the pace of every step (pm, the largest multiplier), and a gang
// whose GPUs are on more than one node pays penalty on every step as
// well (loc; 1 on one node). The job's iteration time is its nominal one
// × pm × loc. An empty gang runs at the nominal pace (1, 1).
func GangSlowdown[N comparable](multipliers []float64, nodes []N, penalty float64) (pm, loc float64) {
	pm, loc = 1, 1
	for i, m := range multipliers {
		if i == 0 || m > pm {
			pm = m
		}
	}
	for _, n := range nodes {
		if n != nodes[0] {
			return pm, penalty
		}
	}
	return pm, loc
}
