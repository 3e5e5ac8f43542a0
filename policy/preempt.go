package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Preempt is the preemption extension point: for a job that fits nowhere,
// which running jobs to stop (victims) and where it then goes. It is asked
// only for a job that outranks some preemptible running job, and not when
// a Round decides who runs. `--preempt` chooses it.
type Preempt interface {
	// Name is the rule's name on the command line.
	Name() string
	// Victims finds the preemption that lets r fit, or reports there is none.
	Victims(c *Cluster, r *Request) (Preemption, bool)
}

// DefaultPreempt is the preemption rule of a scheduler that names none.
const DefaultPreempt = "fewest-victims"

var preempts = map[string]Preempt{}

// RegisterPreempt makes a preemption rule selectable by its name.
func RegisterPreempt(p Preempt) { preempts[p.Name()] = p }

// LookupPreempt finds a preemption rule by name.
func LookupPreempt(name string) (Preempt, error) {
	if p, ok := preempts[name]; ok {
		return p, nil
	}
	names := make([]string, 0, len(preempts))
	for n := range preempts {
		names = append(names, n)
	}
	slices.Sort(names)
	return nil, fmt.Errorf("unknown preemption rule %q (known: %s)", name, strings.Join(names, ", "))
}

func init() {
	RegisterPreempt(fewestVictims{})
	RegisterPreempt(noPreemption{})
}

// fewestVictims is ChooseVictims: among strictly lower-priority
// preemptible jobs, the fewest victims, then the least lost work, then the
// lower GPU id.
type fewestVictims struct{}

func (fewestVictims) Name() string { return DefaultPreempt }
func (fewestVictims) Victims(c *Cluster, r *Request) (Preemption, bool) {
	return ChooseVictims(c, r)
}

// noPreemption never preempts: a job that fits nowhere waits (its turn in
// queue order, or the starvation age's hold), whatever its priority.
type noPreemption struct{}

func (noPreemption) Name() string { return "none" }
func (noPreemption) Victims(*Cluster, *Request) (Preemption, bool) {
	return Preemption{}, false
}
