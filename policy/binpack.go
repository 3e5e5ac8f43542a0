package policy

// binpack packs onto the busiest GPU where the job fits: highest summed
// util, then more VRAM used, then lower GPU id (DESIGN §4).
type binpack struct{}

func init() { Register[Policy](binpack{}) }

func (binpack) Name() string                     { return "binpack" }
func (binpack) Score(_ *Cluster, g *GPU) float64 { return min(g.Util, 100) }
func (binpack) Better(_ *Cluster, a, b *GPU) bool {
	if a.Util != b.Util {
		return a.Util > b.Util
	}
	if ua, ub := a.VRAMUsed(), b.VRAMUsed(); ua != ub {
		return ua > ub
	}
	return a.Index < b.Index
}

// Key orders by util then VRAM used, both descending (Better's order).
func (binpack) Key(g *GPU) (float64, int64) { return -g.Util, -g.VRAMUsed() }

// BoundByCapacity: binpack never fills a GPU past its compute (CapacityBound).
func (binpack) BoundByCapacity() {}
