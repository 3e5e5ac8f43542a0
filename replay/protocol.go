package replay

import (
	"math/rand"
	"slices"
	"strings"

	"github.com/gpusched/gpusched/openb"
	"github.com/gpusched/gpusched/policy"
)

// DefaultInflate is the paper's "tune 1.3": pods are resampled until their
// GPU demand reaches 1.3 times the cluster's GPUs.
const DefaultInflate = 1.3

// alignmentDraws is how many Float64 draws of the seeded source come between
// the tuning and the node permutation. The paper's simulator makes draws in
// between (its informers and scheduler share the global source); ten is the
// count that lines the permutation up with the published per-seed curves
// (POLICIES.md §0), not a tuned constant of ours.
const alignmentDraws = 10

// Plan is one run of the paper's protocol: the pods in arrival order and
// each node's tie-break rank, for one seed.
type Plan struct {
	Seed    int64
	Inflate float64
	Nodes   []openb.Node
	// Pods is the arrival order: the shuffled trace, then resampled clones.
	Pods []openb.Pod
	// Rank is each node's tie-break rank (lowest wins), by node name.
	Rank map[string]int
	// Workload is the typical classes of the original pod list.
	Workload *policy.Workload
	// CapacityMilli is the cluster's GPUs in thousandths.
	CapacityMilli int64
	// Clones is how many pods tuning added (negative: removed).
	Clones int
	// PolicySeed seeds the draws of the policies that draw (random) while
	// scheduling: the protocol's source's next draw after the permutation,
	// so scheduling draws continue that stream rather than repeat it from
	// the start (a repeat would tie node choices to the pod order).
	PolicySeed int64
}

// ClassOf is a pod's class for the fragmentation workload.
func ClassOf(p *openb.Pod) policy.ClassKey {
	return policy.ClassKey{CPUMilli: p.CPUMilli, Milli: p.Milli, GPUs: p.GPUs, Models: strings.Join(p.Models, "|")}
}

// Workload is the typical-pod workload of a pod list (POLICIES.md §4),
// computed from the original list, before shuffling and tuning.
func Workload(pods []openb.Pod) *policy.Workload {
	counts := map[policy.ClassKey]int{}
	for i := range pods {
		counts[ClassOf(&pods[i])]++
	}
	return policy.TypicalWorkload(counts)
}

// Prepare applies the paper's protocol (README "How the paper and
// simulator use the trace", POLICIES.md §0) with one seeded math/rand
// source, in the simulator's order of draws: one Int, the shuffle of the
// name-sorted pods, the tuning to inflate × capacity, ten Float64s, and
// the node permutation.
func Prepare(nodes []openb.Node, pods []openb.Pod, seed int64, inflate float64) Plan {
	if inflate <= 0 {
		inflate = DefaultInflate
	}
	plan := Plan{Seed: seed, Inflate: inflate, Workload: Workload(pods), Rank: map[string]int{}}
	plan.Nodes = slices.Clone(nodes)
	slices.SortStableFunc(plan.Nodes, func(a, b openb.Node) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range plan.Nodes {
		plan.CapacityMilli += int64(n.GPUs) * policy.MilliPerGPU
	}
	sorted := slices.Clone(pods)
	slices.SortStableFunc(sorted, func(a, b openb.Pod) int { return strings.Compare(a.Name, b.Name) })

	rng := rand.New(rand.NewSource(seed))
	rng.Int() // the simulator spends one draw on a debug log argument
	order := slices.Clone(sorted)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })

	target := inflate * float64(plan.CapacityMilli)
	var total int64
	for i := range order {
		total += order[i].GPUMilli()
	}
	if float64(total) < target {
		for {
			p := sorted[rng.Intn(len(sorted))]
			// The simulator's stopping test adds the per-GPU share, not
			// k·g, and discards the pod that stops it (POLICIES.md §0.5).
			if float64(total+int64(p.Milli)) > target {
				break
			}
			order = append(order, p)
			total += p.GPUMilli()
			plan.Clones++
		}
	} else {
		for float64(total) > target && len(order) > 0 {
			i := rng.Intn(len(order))
			total -= order[i].GPUMilli()
			order = slices.Delete(order, i, i+1)
			plan.Clones--
		}
	}
	plan.Pods = order
	for range alignmentDraws {
		rng.Float64()
	}
	for i, r := range rng.Perm(len(plan.Nodes)) {
		plan.Rank[plan.Nodes[i].Name] = r
	}
	plan.PolicySeed = rng.Int63()
	return plan
}
