package policy

// firstFit takes the lowest GPU id where the job fits.
type firstFit struct{}

func init() { Register[Policy](firstFit{}) }

func (firstFit) Name() string                      { return "first-fit" }
func (firstFit) Score(_ *Cluster, _ *GPU) float64  { return 100 }
func (firstFit) Better(_ *Cluster, a, b *GPU) bool { return a.Index < b.Index }

// Key is the same for every GPU: the GPU index alone orders them.
func (firstFit) Key(*GPU) (float64, int64) { return 0, 0 }

// BoundByCapacity: firstFit never fills a GPU past its compute (CapacityBound).
func (firstFit) BoundByCapacity() {}
