package policy

// firstFit takes the lowest GPU id where the job fits.
type firstFit struct{}

func init() { Register(firstFit{}) }

func (firstFit) Name() string                      { return "first-fit" }
func (firstFit) Score(_ *Cluster, _ *GPU) float64  { return 100 }
func (firstFit) Better(_ *Cluster, a, b *GPU) bool { return a.Index < b.Index }
