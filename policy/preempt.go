package policy

// Preempt is the preemption extension point: for a job that fits nowhere,
// which running jobs to stop (victims) and where it then goes. It is asked
// only for a job that outranks some preemptible running job, and not when
// a Round decides who runs. `--preempt` chooses it.
type Preempt interface {
	Plugin
	// Victims finds the preemption that lets r fit, or reports there is none.
	Victims(c *Cluster, r *Request) (Preemption, bool)
}

// DefaultPreempt is the preemption rule of a scheduler that names none.
const DefaultPreempt = "fewest-victims"

var _ = DeclarePoint[Preempt]("preemption rule", DefaultPreempt, nil)

func init() {
	Register[Preempt](fewestVictims{})
	Register[Preempt](noPreemption{})
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
