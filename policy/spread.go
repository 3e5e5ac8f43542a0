package policy

// spread places on the least busy GPU where the job fits: lowest summed
// util, then less VRAM used, then lower GPU id (DESIGN §4).
type spread struct{}

func init() { Register[Policy](spread{}) }

func (spread) Name() string                     { return "spread" }
func (spread) Score(_ *Cluster, g *GPU) float64 { return 100 - min(g.Util, 100) }
func (spread) Better(_ *Cluster, a, b *GPU) bool {
	if a.Util != b.Util {
		return a.Util < b.Util
	}
	if ua, ub := a.VRAMUsed(), b.VRAMUsed(); ua != ub {
		return ua < ub
	}
	return a.Index < b.Index
}

// Key orders by util then VRAM used, both ascending (Better's order).
func (spread) Key(g *GPU) (float64, int64) { return g.Util, g.VRAMUsed() }

// BoundByCapacity: spread never fills a GPU past its compute (CapacityBound).
func (spread) BoundByCapacity() {}
