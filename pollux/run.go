package pollux

import (
	"context"
	"fmt"
	"slices"

	"github.com/gpusched/gpusched/policy"
)

// Cluster is the simulated cluster: Nodes nodes of GPUsPerNode GPUs, and
// the scheduling interval Δ in seconds (MODEL.md §1: 16 × 4, 60).
type Cluster struct {
	Nodes, GPUsPerNode, Interval int
	// NodeGPUs, when set, is how many GPUs of each node the jobs may use
	// (a live cluster's: its alive GPUs that no other kind of job holds);
	// nil is GPUsPerNode on every node, as in every published run.
	NodeGPUs []int
}

// GPUs is how many GPUs of node n the jobs may use.
func (c Cluster) GPUs(n int) int {
	if c.NodeGPUs != nil {
		return c.NodeGPUs[n]
	}
	return c.GPUsPerNode
}

// TotalGPUs is how many GPUs of the cluster the jobs may use.
func (c Cluster) TotalGPUs() int {
	if c.NodeGPUs == nil {
		return c.Nodes * c.GPUsPerNode
	}
	total := 0
	for _, g := range c.NodeGPUs {
		total += g
	}
	return total
}

// Reference is the cluster of every published run.
var Reference = Cluster{Nodes: 16, GPUsPerNode: 4, Interval: 60}

// Alloc is an allocation map: a job's list of node indices, one per
// replica, by job name.
type Alloc map[string][]int

// Policy decides each interval's allocation (§5.1 step 5): given the
// active jobs in workload order, the cluster and the allocation of those
// jobs now, the new allocation. It may keep state between calls.
type Policy interface {
	Name() string
	Allocate(t int, active []*Job, c Cluster, current Alloc) (Alloc, error)
}

// NewPolicy makes the named policy: tiresias, optimus or pollux (its
// search drawn from seed 1).
func NewPolicy(name string) (Policy, error) { return NewSeededPolicy(name, 1) }

// NewSeededPolicy is NewPolicy with pollux's search drawn from seed (the
// other two draw nothing).
func NewSeededPolicy(name string, seed uint64) (Policy, error) {
	m, err := policy.Lookup[Maker](name)
	if err != nil {
		return nil, err
	}
	return m.New(seed), nil
}

// Maker is the extension point of the reproduction's training policies
// (registered with policy.Register[Maker], like every other extension):
// a named maker of one run's Policy, its random choices drawn from the
// run's seed.
type Maker = policy.Maker[Policy]

var _ = policy.DeclarePoint[Maker]("Pollux policy", "", nil)

func init() {
	policy.Register(policy.NewMaker("tiresias", func(uint64) Policy { return NewTiresias() }))
	policy.Register(policy.NewMaker("optimus", func(uint64) Policy { return NewOptimus() }))
	policy.Register(policy.NewMaker("pollux", func(seed uint64) Policy { return NewPollux(seed) }))
}

// elasticPolicy is a policy whose jobs choose their own batch sizes.
type elasticPolicy interface{ Elastic() bool }

// Result is a run's jobs, in workload order, every one completed.
type Result struct {
	Jobs []*Job
	// End is the cluster time when the last job completed its interval.
	End int
}

// MeanJCT is the average JCT: the integer sum over the jobs divided once
// (as the published averages are computed, MODEL.md §5.1).
func (r *Result) MeanJCT() float64 {
	sum := 0
	for _, j := range r.Jobs {
		sum += j.JCT()
	}
	return float64(sum) / float64(len(r.Jobs))
}

// Run simulates the workload on c under p to the last completion (§5.1):
// every interval, advance every job by Δ, then let the policy re-allocate
// the active jobs (Rounds.Decide), and reallocate each job whose list
// changed.
func Run(m *Model, specs []Spec, c Cluster, p Policy) (*Result, error) {
	return RunContext(context.Background(), m, specs, c, p, nil)
}

// Progress is how far a run has got: the simulated second reached and
// the jobs completed of all.
type Progress struct {
	Second, Completed, Jobs int
}

// RunContext is Run that ctx stops between intervals (its error then)
// and that reports its progress after every interval (progress may be
// nil; it is called from the run's goroutine).
func RunContext(ctx context.Context, m *Model, specs []Spec, c Cluster, p Policy, progress func(Progress)) (*Result, error) {
	r := NewRounds(m, c, p)
	for _, s := range specs {
		if _, err := r.Add(s); err != nil {
			return nil, err
		}
	}
	t, left := 0, len(r.jobs)
	for left > 0 {
		for _, j := range r.jobs {
			was := j.Done
			if err := j.Advance(c.Interval); err != nil {
				return nil, err
			}
			if j.Done && !was {
				left--
			}
		}
		t += c.Interval
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if progress != nil {
			progress(Progress{Second: t, Completed: len(r.jobs) - left, Jobs: len(r.jobs)})
		}
		if _, err := r.Decide(t); err != nil {
			return nil, err
		}
		if t > 1<<40 {
			return nil, fmt.Errorf("no end after %d s: a job can never complete", t)
		}
	}
	return &Result{Jobs: r.jobs, End: t}, nil
}

// Rounds is the deciding half of the simulator's loop (§5.1 steps 4-6):
// the jobs in workload order, the allocation in force, the policy. Run
// steps the jobs itself; the live cluster's GPU actors step the placed
// jobs there and the scheduler brings their states back (Job.Restore)
// before each Decide, so that both make the same decisions from the same
// states.
type Rounds struct {
	m     *Model
	c     Cluster
	p     Policy
	jobs  []*Job
	alloc Alloc
	// newJob makes a job as the policy runs it (elastic under Pollux).
	newJob func(Spec) (*Job, error)
}

// NewRounds is the deciding state of a run of p on c, with no jobs yet.
func NewRounds(m *Model, c Cluster, p Policy) *Rounds {
	r := &Rounds{m: m, c: c, p: p, alloc: Alloc{}, newJob: m.NewJob}
	if e, ok := p.(elasticPolicy); ok && e.Elastic() {
		r.newJob = m.NewElasticJob
	}
	return r
}

// Add appends a job of spec to the workload (a submission, in order).
func (r *Rounds) Add(s Spec) (*Job, error) {
	j, err := r.newJob(s)
	if err != nil {
		return nil, err
	}
	r.jobs = append(r.jobs, j)
	return j, nil
}

// New makes a job of spec as the policy runs it (elastic under Pollux),
// without adding it to the workload (Insert does).
func (r *Rounds) New(s Spec) (*Job, error) { return r.newJob(s) }

// Insert puts j, taken back after the live cluster's scheduler restarted,
// into the workload in submission order: before the first job it precedes
// (the caller knows the order among jobs of one second), else last. It
// holds no allocation until Assign gives it one.
func (r *Rounds) Insert(j *Job, precedes func(other *Job) bool) {
	i := slices.IndexFunc(r.jobs, precedes)
	if i < 0 {
		i = len(r.jobs)
	}
	r.jobs = slices.Insert(r.jobs, i, j)
}

// Assign sets the allocation in force of the job named name (node indices,
// one per replica, as Decide lists them): where a restarted scheduler
// found it running. Unlike a decision, it charges no restart.
func (r *Rounds) Assign(name string, nodes []int) {
	r.alloc[name] = slices.Clone(nodes)
}

// Jobs are the run's jobs in workload order.
func (r *Rounds) Jobs() []*Job { return r.jobs }

// Nodes is the allocation list of a job in force (nil: not placed).
func (r *Rounds) Nodes(name string) []int { return r.alloc[name] }

// Decide is the decision at second t (§5.1 steps 4-6), every job stepped
// to t: the policy re-allocates the active jobs (submitted by t, not
// done), and each job whose list changed is reallocated (its placement
// set, its restart delay charged; an empty list preempts it). It returns
// those jobs, in workload order.
func (r *Rounds) Decide(t int) ([]*Job, error) {
	var active []*Job
	for _, j := range r.jobs {
		if j.Submit <= t && !j.Done {
			active = append(active, j)
		}
	}
	if len(active) == 0 {
		return nil, nil
	}
	current := Alloc{}
	for _, j := range active {
		if nodes, ok := r.alloc[j.Name]; ok {
			current[j.Name] = nodes
		}
	}
	next, err := r.p.Allocate(t, active, r.c, current)
	if err != nil {
		return nil, err
	}
	var changed []*Job
	for _, j := range active {
		was, had := current[j.Name]
		now, has := next[j.Name]
		if had != has || !slices.Equal(was, now) {
			j.Reallocate(placementOf(now))
			changed = append(changed, j)
		}
	}
	r.alloc = next
	return changed, nil
}

// freeTable is the most-free-node rule's state (Tiresias step 5): each
// node's free GPUs, the nodes with any free at the start in index order.
type freeTable struct {
	nodes []int
	free  map[int]int
}

// newFreeTable counts the GPUs the kept lists leave free on each node.
func newFreeTable(c Cluster, kept Alloc) *freeTable {
	used := make([]int, c.Nodes)
	for _, nodes := range kept {
		for _, n := range nodes {
			used[n]++
		}
	}
	t := &freeTable{free: map[int]int{}}
	for n := 0; n < c.Nodes; n++ {
		if f := c.GPUs(n) - used[n]; f > 0 {
			t.nodes = append(t.nodes, n)
			t.free[n] = f
		}
	}
	return t
}

// take fills a list of q replicas: each time the node with the most free
// GPUs (the first in index order on a tie), as many as it has.
func (t *freeTable) take(q int) []int {
	var list []int
	for len(list) < q {
		best := -1
		for _, n := range t.nodes {
			if best < 0 || t.free[n] > t.free[best] {
				best = n
			}
		}
		if best < 0 || t.free[best] == 0 {
			panic("pollux: placing more replicas than the cluster has free")
		}
		k := min(t.free[best], q-len(list))
		for range k {
			list = append(list, best)
		}
		t.free[best] -= k
	}
	return list
}

// Unplace forgets the allocation of the job named name and preempts it
// (Reallocate with nothing): what the live cluster does when a placement
// the policy decided could not be made or was lost with a GPU, so that
// the next Decide allocates it again. Runs without faults never call it.
func (r *Rounds) Unplace(name string) {
	if _, ok := r.alloc[name]; !ok {
		return
	}
	delete(r.alloc, name)
	for _, j := range r.jobs {
		if j.Name == name {
			j.Reallocate(nil)
		}
	}
}

// Remove takes the job named name out of the run (the live cluster's job
// was cancelled or rejected): it is no longer active, and its allocation
// no longer holds the nodes it named.
func (r *Rounds) Remove(name string) {
	delete(r.alloc, name)
	r.jobs = slices.DeleteFunc(r.jobs, func(j *Job) bool { return j.Name == name })
}

// Resize sets the cluster's nodes: how many GPUs of each the jobs may
// use (the live cluster learns them from its GPUs before each decision).
// GPUsPerNode becomes the most any node has.
func (r *Rounds) Resize(nodeGPUs []int) {
	r.c.Nodes, r.c.NodeGPUs = len(nodeGPUs), slices.Clone(nodeGPUs)
	r.c.GPUsPerNode = 0
	for _, g := range nodeGPUs {
		r.c.GPUsPerNode = max(r.c.GPUsPerNode, g)
	}
}
