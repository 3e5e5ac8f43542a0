package policy

// smallestFit puts a job on the smallest GPU it fits: least VRAM, then
// binpack's order among GPUs of that size (highest summed util, then more
// VRAM used, then lower id). On a cluster of A100s and V100s the small
// models and evaluations take the V100 16GBs and leave the A100s to the
// jobs only they can hold (the reference demo's picture).
type smallestFit struct{}

func init() { Register[Policy](smallestFit{}) }

func (smallestFit) Name() string { return "smallest-fit" }

// Score rates a GPU 0..100 by how small it is next to the largest GPU of
// the cluster (its size is what the policy ranks by first).
func (smallestFit) Score(c *Cluster, g *GPU) float64 {
	largest := g.VRAMTotal
	for _, o := range c.GPUs {
		largest = max(largest, o.VRAMTotal)
	}
	if largest == 0 {
		return 0
	}
	return 100 * (1 - float64(g.VRAMTotal)/float64(largest))
}

func (p smallestFit) Better(_ *Cluster, a, b *GPU) bool {
	ka1, ka2 := p.Key(a)
	kb1, kb2 := p.Key(b)
	if ka1 != kb1 {
		return ka1 < kb1
	}
	if ka2 != kb2 {
		return ka2 < kb2
	}
	return a.Index < b.Index
}

// smallestFitUtilRange is the room the key keeps for utilisation below
// one MB of VRAM size: a GPU's summed util stays far below it (ten jobs
// at 100 % are 1,000).
const smallestFitUtilRange = 1e6

// Key orders by VRAM size in whole MB ascending, then util descending
// (both in the first number: size × 10^6 − util, exact in a float64 for
// any GPU up to petabytes), then VRAM used descending.
func (smallestFit) Key(g *GPU) (float64, int64) {
	return float64(g.VRAMTotal>>20)*smallestFitUtilRange - min(g.Util, smallestFitUtilRange-1), -g.VRAMUsed()
}

// BoundByCapacity: smallestFit never fills a GPU past its compute (CapacityBound).
func (smallestFit) BoundByCapacity() {}
