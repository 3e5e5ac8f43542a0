package policy

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Policy is a placement policy. It is either a GPURanker (binpack, spread,
// first-fit: rank single GPUs) or a NodeScorer (the FGD paper's policies:
// score nodes, then pick GPUs there); Place runs either.
type Policy interface {
	// Name is the policy's public name ("binpack").
	Name() string
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

var (
	registryMu sync.RWMutex
	registry   = map[string]Policy{}
)

// Register adds a policy under its name; it panics on a duplicate or on a
// policy that is neither a GPURanker nor a NodeScorer, programming errors
// caught at start.
func Register(p Policy) {
	_, ranker := p.(GPURanker)
	_, scorer := p.(NodeScorer)
	if !ranker && !scorer {
		panic("policy: " + p.Name() + " is neither a GPURanker nor a NodeScorer")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[p.Name()]; dup {
		panic("policy: duplicate registration of " + p.Name())
	}
	registry[p.Name()] = p
}

// Lookup finds a registered policy by name.
func Lookup(name string) (Policy, error) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	if p, ok := registry[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown policy %q (available: %s)", name, strings.Join(namesLocked(), ", "))
}

// Names lists the registered policies in order.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DefaultPolicy is the policy a cluster starts with.
const DefaultPolicy = "binpack"
