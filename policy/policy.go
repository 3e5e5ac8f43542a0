package policy

import "errors"

// Policy is a placement policy. It is either a GPURanker (binpack, spread,
// first-fit: rank single GPUs) or a NodeScorer (the FGD paper's policies:
// score nodes, then pick GPUs there); Place runs either.
type Policy interface {
	Plugin
}

// GPURanker ranks GPUs that passed the filter. Score puts a GPU on the
// 0..100 scale for explanations; Better is the full order, including
// tie-breaks.
type GPURanker interface {
	Policy
	// Score rates g for explanations: higher is preferred.
	Score(c *Cluster, g *GPU) float64
	// Better reports whether a is strictly preferred to b.
	Better(c *Cluster, a, b *GPU) bool
}

// CapacityBound is implemented by the policies a GPU's compute bounds
// (binpack, spread, first-fit, smallest-fit): they put a job on a GPU only
// while the summed utilisation of the jobs there plus its own stays within
// the cluster's compute limit (Cluster.UtilLimit: 100 %, or more with
// --oversubscribe). Without it binpack stacks jobs by VRAM alone, to twice
// a GPU's compute, and every job there runs slower. The FGD paper's
// policies do not implement it: they keep the paper's rules, where a GPU's
// share (gpu_milli) is the only bound.
type CapacityBound interface {
	Policy
	// BoundByCapacity marks the policy; it does nothing.
	BoundByCapacity()
}

// BindsCapacity reports whether p is a CapacityBound policy.
func BindsCapacity(p Policy) bool {
	_, ok := p.(CapacityBound)
	return ok
}

// The placement point: its policies are listed sorted (the default is not
// put first), and each must rank GPUs or score nodes, or Place could not
// run it.
var _ = DeclarePoint[Policy]("policy", "", func(p Policy) error {
	_, ranker := p.(GPURanker)
	_, scorer := p.(NodeScorer)
	if !ranker && !scorer {
		return errors.New("neither a GPURanker nor a NodeScorer")
	}
	return nil
})

// DefaultPolicy is the policy a cluster starts with.
const DefaultPolicy = "binpack"
