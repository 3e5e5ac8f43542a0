package gavel

import "github.com/gpusched/gpusched/policy"

// View is what a policy sees when the allocation is recomputed: the time,
// the cluster and the active jobs in id order (§7).
type View struct {
	// Now is the recomputation's time in seconds.
	Now float64
	// Counts are the GPUs of each type.
	Counts [numTypes]int
	// Jobs are the active jobs, in increasing id.
	Jobs []JobView
	data *Data
}

// JobView is one active job as a policy sees it.
type JobView struct {
	ID       int
	Template int
	Scale    int
	Arrival  float64
	// Remaining are the steps still to run.
	Remaining float64
	// Rates are its steps/s alone on each type at its scale factor.
	Rates [numTypes]float64
}

// Packed is a and b's steps/s packed on type w.
func (v *View) Packed(a, b JobView, w int) [2]float64 {
	return v.data.packed[w][a.Template][b.Template][scaleIndex(a.Scale)]
}

// Policy computes an allocation from a View (§7). Its name is the
// reference's (FIFO, Isolated, AlloX_Perf, Gandiva_Packing): the round
// mechanism reads it as the reference does, shuffling the worker-type
// order unless it holds "Perf" or "Packing", creating packed pairs when it
// holds "Packing", and running only positive priorities when it starts
// with "FIFO".
type Policy interface {
	// Name is the reference's policy name.
	Name() string
	// Allocate is the policy's allocation at v.
	Allocate(v *View) Allocation
}

// Maker is the extension point of Gavel's policies (registered with
// policy.Register[Maker], like every other extension): a maker of one
// run's Policy under the name the command line uses (the reference's -p),
// given the run's seed.
type Maker = policy.Maker[Policy]

var _ = policy.DeclarePoint[Maker]("Gavel policy", "", nil)

func init() {
	for name, make := range map[string]func(seed uint64) Policy{
		"fifo":     func(seed uint64) Policy { return newFIFO(seed) },
		"isolated": func(uint64) Policy { return isolated{} },
		"allox":    func(uint64) Policy { return &allox{} },
		"gandiva":  func(seed uint64) Policy { return newGandiva(seed) },
		// The linear-programming policies (lppolicies.go, packed.go).
		"max_min_fairness":          func(uint64) Policy { return maxMinFairness{} },
		"max_min_fairness_perf":     func(uint64) Policy { return maxMinFairness{perf: true} },
		"finish_time_fairness":      func(uint64) Policy { return finishTimeFairness{} },
		"finish_time_fairness_perf": func(uint64) Policy { return finishTimeFairness{perf: true} },
		"min_total_duration":        func(uint64) Policy { return minTotalDuration{} },
		"max_sum_throughput_perf":   func(uint64) Policy { return maxSumThroughput{} },
		"max_min_fairness_packed":   func(uint64) Policy { return maxMinFairnessPacked{} },
	} {
		policy.Register(policy.NewMaker(name, make))
	}
}

// PolicyNames are the policies NewPolicy knows, sorted.
func PolicyNames() []string { return policy.Names[Maker]() }

// NewPolicy is the policy the reference calls name (its -p argument),
// with its random choices drawn from seed (§0: FIFO's and Gandiva's
// generators are seeded with the run's seed).
func NewPolicy(name string, seed uint64) (Policy, error) {
	m, err := policy.Lookup[Maker](name)
	if err != nil {
		return nil, err
	}
	return m.New(seed), nil
}

// isolatedShares is Isolated's (and Gandiva's) equal split (§7.2): each of
// m parties gets counts/m GPUs of every type, divided by its scale
// factor, scaled down so its time over all types is at most 1. The sums
// go in the reference's order (k80, p100, v100).
func isolatedShares(counts [numTypes]int, m, scale int) [numTypes]float64 {
	var x [numTypes]float64
	for w := range numTypes {
		x[w] = (float64(counts[w]) / float64(m)) / float64(scale)
	}
	s := max((x[K80]+x[P100])+x[V100], 1.0)
	for w := range numTypes {
		x[w] /= s
	}
	return x
}

// isolated is the Isolated policy (§7.2): every job an equal share of
// every type. Stateless.
type isolated struct{}

// Name is the reference's name, Isolated.
func (isolated) Name() string { return "Isolated" }

// Allocate gives every active job its equal share.
func (isolated) Allocate(v *View) Allocation {
	out := Allocation{}
	for _, j := range v.Jobs {
		out[Single(j.ID)] = isolatedShares(v.Counts, len(v.Jobs), j.Scale)
	}
	return out
}
