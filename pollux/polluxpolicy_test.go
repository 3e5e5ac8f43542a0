package pollux

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

// TestRepairLeavesAnAllocationTheClusterHolds: whatever the search breeds,
// repair leaves at most the node's GPUs on each node (nodes of 0 to 5
// GPUs, as a live cluster's other jobs leave them), each job within its
// replica limit, and at most one job spanning nodes on any node.
func TestRepairLeavesAnAllocationTheClusterHolds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	p := NewPollux(1)
	for trial := range 200 {
		jobs := 1 + rng.IntN(12)
		s := &search{p: p, jobs: make([]*Job, jobs), nodes: 6, gpus: make([]int, 6), maxrep: make([]int, jobs)}
		for k := range s.gpus {
			s.gpus[k] = rng.IntN(6)
		}
		for i := range s.maxrep {
			s.maxrep[i] = 1 + rng.IntN(10)
		}
		x := make(genome, jobs*s.nodes)
		for i := range x {
			x[i] = uint8(rng.IntN(7))
		}
		s.repair(x)
		spanning := make([]int, s.nodes)
		for i := range jobs {
			row := x[i*s.nodes : (i+1)*s.nodes]
			if sum(row) > s.maxrep[i] {
				t.Fatalf("trial %d: job %d has %d replicas, limit %d", trial, i, sum(row), s.maxrep[i])
			}
			if countNonzero(row) > 1 {
				for k, c := range row {
					if c > 0 {
						spanning[k]++
					}
				}
			}
		}
		for k := range s.nodes {
			used := 0
			for i := range jobs {
				used += int(x[i*s.nodes+k])
			}
			if used > s.gpus[k] || spanning[k] > 1 {
				t.Fatalf("trial %d: node %d holds %d replicas and %d jobs spanning nodes", trial, k, used, spanning[k])
			}
		}
	}
}

// TestPolluxRunsRepeatAndAdapt: on the first 16 jobs of workload 6, the
// Pollux policy completes every job; the same seed gives the same JCTs
// (the search draws only from its seed); and its jobs are elastic — some
// job runs on several replica counts, and every job with a model chose
// batch sizes its application allows.
func TestPolluxRunsRepeatAndAdapt(t *testing.T) {
	m := loadModel(t)
	specs, err := ReadWorkload(filepath.Join(LoadFolder(m.Dir, 1), "workload-6.csv"))
	if err != nil {
		t.Fatal(err)
	}
	specs = specs[:16]
	run := func(seed uint64) ([]int, []*Job) {
		p := NewPollux(seed)
		p.Generations = 20
		res, err := Run(m, specs, Reference, p)
		if err != nil {
			t.Fatal(err)
		}
		var jcts []int
		for _, j := range res.Jobs {
			if !j.Done {
				t.Fatalf("job %s not done", j.Name)
			}
			jcts = append(jcts, j.JCT())
		}
		return jcts, res.Jobs
	}
	a, jobs := run(1)
	if b, _ := run(1); !slices.Equal(a, b) {
		t.Fatalf("seed 1 twice: %v then %v", a, b)
	}
	resized := 0
	for _, j := range jobs {
		counts := map[int]bool{}
		for _, o := range j.elastic.profile {
			counts[o.replicas] = true
			if o.local < j.app.MinLocal || o.local > j.app.MaxLocal {
				t.Errorf("job %s ran at local batch %d, outside %d..%d", j.Name, o.local, j.app.MinLocal, j.app.MaxLocal)
			}
		}
		if len(counts) > 1 {
			resized++
		}
	}
	if resized == 0 {
		t.Error("no job ran on more than one replica count: the policy does not scale jobs")
	}
}

// capped checks that each allocation of the policy it wraps puts no more
// replicas on a node than the cluster lets the jobs use there.
type capped struct {
	Policy
	t       *testing.T
	decided int
}

// Elastic is the wrapped policy's: Pollux's jobs choose their batch sizes.
func (p *capped) Elastic() bool {
	e, ok := p.Policy.(elasticPolicy)
	return ok && e.Elastic()
}

func (p *capped) Allocate(t int, active []*Job, c Cluster, current Alloc) (Alloc, error) {
	next, err := p.Policy.Allocate(t, active, c, current)
	used := make([]int, c.Nodes)
	for _, nodes := range next {
		for _, n := range nodes {
			used[n]++
		}
	}
	for n, u := range used {
		if u > c.GPUs(n) {
			p.t.Errorf("%s at %d s: %d replicas on node %d, which has %d GPUs for the jobs", p.Name(), t, u, n, c.GPUs(n))
		}
	}
	p.decided++
	return next, err
}

// TestPoliciesAllocateOnlyTheGPUsEachNodeHas: a cluster whose nodes each
// say how many GPUs the jobs may use (a live cluster's other jobs hold
// the rest) is decided within them by all three policies, and a cluster
// that gives every node its GPUsPerNode is decided exactly as the
// published runs' (the same JCTs).
func TestPoliciesAllocateOnlyTheGPUsEachNodeHas(t *testing.T) {
	m := loadModel(t)
	specs, err := ReadWorkload(filepath.Join(LoadFolder(m.Dir, 1), "workload-6.csv"))
	if err != nil {
		t.Fatal(err)
	}
	specs = specs[:16]
	uneven := make([]int, Reference.Nodes)
	for n := range uneven {
		uneven[n] = []int{4, 3, 0, 2}[n%4]
	}
	for _, name := range []string{"tiresias", "optimus", "pollux"} {
		run := func(c Cluster) []int {
			p, err := NewPolicy(name)
			if err != nil {
				t.Fatal(err)
			}
			if pp, ok := p.(*Pollux); ok {
				pp.Generations = 20
			}
			cp := &capped{Policy: p, t: t}
			res, err := Run(m, specs, c, cp)
			if err != nil {
				t.Fatal(err)
			}
			if cp.decided == 0 {
				t.Fatalf("%s decided nothing", name)
			}
			var jcts []int
			for _, j := range res.Jobs {
				jcts = append(jcts, j.JCT())
			}
			return jcts
		}
		published := run(Reference)
		even := Reference
		even.NodeGPUs = slices.Repeat([]int{Reference.GPUsPerNode}, Reference.Nodes)
		if got := run(even); !slices.Equal(got, published) {
			t.Errorf("%s: every node's GPUs given one by one changed the JCTs: %v, published cluster %v", name, got, published)
		}
		c := Reference
		c.NodeGPUs = uneven
		if got := run(c); slices.Equal(got, published) {
			t.Errorf("%s: a cluster with a quarter of its nodes taken by other jobs gave the same JCTs as the whole cluster", name)
		}
	}
}

// TestRowCountsCountByteByByte: the eight-at-a-time counts of a row (the
// nodes it uses and its replicas), the bytewise or and the added load are
// what a loop over its bytes gives, for rows of every length up to 40 and counts up to 255.
func TestRowCountsCountByteByByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := range 2000 {
		row, other := make(genome, rng.IntN(41)), make(genome, 0)
		for i := range row {
			switch rng.IntN(3) {
			case 0: // empty
			case 1:
				row[i] = uint8(1 + rng.IntN(4))
			default:
				row[i] = uint8(rng.IntN(256))
			}
			other = append(other, uint8(rng.IntN(256)))
		}
		wantNodes, wantReplicas := 0, 0
		for _, c := range row {
			if c > 0 {
				wantNodes++
			}
			wantReplicas += int(c)
		}
		if n, r := rowCounts(row); n != wantNodes || r != wantReplicas {
			t.Fatalf("trial %d: %v counts %d nodes and %d replicas, want %d and %d", trial, row, n, r, wantNodes, wantReplicas)
		}
		want := slices.Clone(other)
		for i := range want {
			want[i] |= row[i]
		}
		if orInto(other, row); !slices.Equal(other, want) {
			t.Fatalf("trial %d: or of %v is %v, want %v", trial, row, other, want)
		}
		load, wantLoad := make([]int, len(row)), make([]int, len(row))
		for i := range load {
			load[i] = rng.IntN(100)
			wantLoad[i] = load[i] + int(row[i])
		}
		if addLoad(load, row); !slices.Equal(load, wantLoad) {
			t.Fatalf("trial %d: load after adding %v is %v, want %v", trial, row, load, wantLoad)
		}
	}
}

// TestMutationRaisesCountsWithTheReferencesChances: the mutation raises a
// job's count on a free node with chance 1/(jobs), or'd with 1/(jobs on
// that node) where the job is one of them — the shares the reference's
// _mutation takes over its jobs axis — and not 1/(free nodes). Ten jobs
// on four nodes of four GPUs, all free: a job on an empty node is raised
// (by 1 to 4, a draw of 0 to 4) in 1/10 × 4/5 of the children; one of two
// jobs holding one replica on a node in (1/10 + 1/2 − 1/20) × 3/4.
func TestMutationRaisesCountsWithTheReferencesChances(t *testing.T) {
	const jobs, nodes, children = 10, 4, 40000
	s := &search{p: NewPollux(7), jobs: make([]*Job, jobs), nodes: nodes, gpus: []int{4, 4, 4, 4}}
	s.base = make(genome, jobs*nodes)
	s.base[0*nodes+0], s.base[1*nodes+0], s.base[2*nodes+1] = 1, 1, 2 // a reset changes nothing
	emptyRaised, sharedRaised := 0, 0
	for range children {
		x := slices.Clone(s.base)
		s.mutate(x)
		if x[5*nodes+3] > 0 {
			emptyRaised++
		}
		if x[0*nodes+0] > 1 {
			sharedRaised++
		}
	}
	// A count is dropped before the raise in 1 of 100 children (a row
	// chosen, 1 in 10, then the count, 1 in 10): that moves these by
	// under 0.01, inside the tolerance.
	wantEmpty := 0.1 * 0.8
	wantShared := (0.1 + 0.5 - 0.1*0.5) * 0.75
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"a job on an empty node", float64(emptyRaised) / children, wantEmpty}, {"a job sharing its node", float64(sharedRaised) / children, wantShared}} {
		if math.Abs(c.got-c.want) > 0.015 {
			t.Errorf("%s was raised in %.3f of the children, want %.3f", c.what, c.got, c.want)
		}
	}
}

// sum is row's replicas.
func sum(row genome) int {
	_, r := rowCounts(row)
	return r
}

// TestSpeedupsAreMemoisedPerModel: a job's speedups are kept from one
// interval to the next while its model and the fair share are the same,
// and made afresh when either changes — a stale memo would give the
// search the old model's answers.
func TestSpeedupsAreMemoisedPerModel(t *testing.T) {
	app := &App{B0: 64, Bmax: 4096, MinLocal: 16, MaxLocal: 512}
	job := func(g2 float64) *Job {
		perf := PerfParams{AlphaC: 0.01, BetaC: 0.0005, AlphaN: 0.02, BetaN: 0.001, AlphaR: 0.01, BetaR: 0.0005, Gamma: 1.5}
		return &Job{app: app, elastic: &elasticState{perf: &perf, g2: g2, s2: 2}}
	}
	j := job(1)
	first := speedupOf(j, 2, 4, 16)(2, 6)
	memo := j.elastic.speedups
	if again := speedupOf(j, 2, 4, 16)(2, 6); again != first || j.elastic.speedups != memo {
		t.Fatalf("same model, same fair share: speedup %v (memo kept: %v), want %v from the kept memo", again, j.elastic.speedups == memo, first)
	}
	j.elastic.g2 = 5 // observed: its gradient statistics moved
	want := speedupOf(job(5), 2, 4, 16)(2, 6)
	if got := speedupOf(j, 2, 4, 16)(2, 6); got != want || want == first {
		t.Fatalf("after the model changed: speedup %v, a fresh job's %v (the old model's %v)", got, want, first)
	}
	want = speedupOf(job(5), 3, 4, 16)(2, 6)
	if got := speedupOf(j, 3, 4, 16)(2, 6); got != want {
		t.Fatalf("after the fair share changed: speedup %v, want %v", got, want)
	}
	if c := j.elastic.clone(); c.speedups != nil {
		t.Fatal("a clone shares the memo: it must share nothing")
	}
}

// TestDrawsAreRandsDraws: the search's own draws (uniform, intN, shuffle)
// give rand.Rand's numbers from the same seed, draw for draw — bounds
// that are powers of two, small, and large enough to be redrawn often.
func TestDrawsAreRandsDraws(t *testing.T) {
	p := NewPollux(5)
	r := rand.New(rand.NewPCG(5, 0x9e3779b97f4a7c15))
	pick := rand.New(rand.NewPCG(1, 2))
	for i := range 200_000 {
		switch pick.IntN(4) {
		case 0:
			if got, want := p.uniform(), r.Float64(); got != want {
				t.Fatalf("draw %d: uniform %v, Float64 %v", i, got, want)
			}
		case 1:
			n := 1 + pick.IntN(300)
			if got, want := p.intN(n), r.IntN(n); got != want {
				t.Fatalf("draw %d: intN(%d) %d, IntN %d", i, n, got, want)
			}
		case 2:
			n := 1<<62 + pick.IntN(1<<61) // about a third of draws redrawn
			if got, want := p.intN(n), r.IntN(n); got != want {
				t.Fatalf("draw %d: intN(%d) %d, IntN %d", i, n, got, want)
			}
		default:
			n := pick.IntN(20)
			a, b := make([]int, n), make([]int, n)
			for k := range n {
				a[k], b[k] = k, k
			}
			p.shuffle(a)
			r.Shuffle(n, func(i, j int) { b[i], b[j] = b[j], b[i] })
			if !slices.Equal(a, b) {
				t.Fatalf("draw %d: shuffle %v, Shuffle %v", i, a, b)
			}
		}
	}
}
