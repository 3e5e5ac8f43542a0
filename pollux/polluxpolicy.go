package pollux

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// Pollux is the Pollux policy as MODEL.md §8 describes it: every interval
// a genetic search (NSGA-II) over job × node replica counts for the
// allocation that best trades the jobs' speedups (their harmonic mean,
// restarts penalised) against the cluster's utility, each job's speedup
// coming from its own fitted goodput model. The reference's search is
// random and unseeded (its published averages vary by about ±5 %); this
// one draws from Seed, so a run is repeatable and several seeds give the
// spread.
type Pollux struct {
	// draws is the search's source of random numbers, read directly:
	// uniform and intN draw what rand.Rand's Float64 and IntN would draw
	// from it, without a call through the Source interface per number.
	draws *rand.PCG
	// prev is the last interval's final population, each member a row of
	// replica counts per node by job name (the next search starts there).
	prev []map[string]genome
	// Population and Generations size the search (§8: 100 and 100).
	Population, Generations int
}

// NewPollux is the policy with its search drawn from seed.
func NewPollux(seed uint64) *Pollux {
	draws := rand.NewPCG(seed, 0x9e3779b97f4a7c15)
	return &Pollux{draws: draws, Population: 100, Generations: 100}
}

// uniform is rand.Rand's Float64 — the next draw of the source, as math/rand/v2
// makes a float of it (the top 53 bits over 2⁵³) — without the call
// through the Source interface: mutation draws one per job and free node
// per child, the search's most frequent call.
func (p *Pollux) uniform() float64 {
	return float64(p.draws.Uint64()<<11>>11) / (1 << 53)
}

// intN is rand.Rand's IntN(n) for n > 0, on a 64-bit machine, drawn from
// the same source: a power of two masks one draw; any other n takes the
// high word of draw × n, drawing again while the low word falls in the
// 2⁶⁴ mod n products that would bias it (Lemire's method). Its numbers
// are rand.Rand's, draw for draw (TestDrawsAreRandsDraws): the search's
// outcome depends on every one of them.
func (p *Pollux) intN(n int) int {
	u := uint64(n)
	if u&(u-1) == 0 {
		return int(p.draws.Uint64() & (u - 1))
	}
	hi, lo := bits.Mul64(p.draws.Uint64(), u)
	if lo < u {
		thresh := -u % u
		for lo < thresh {
			hi, lo = bits.Mul64(p.draws.Uint64(), u)
		}
	}
	return int(hi)
}

// shuffle is rand.Rand's Shuffle of list (Fisher–Yates, from the end),
// drawing from the same source.
func (p *Pollux) shuffle(list []int) {
	for i := len(list) - 1; i > 0; i-- {
		j := p.intN(i + 1)
		list[i], list[j] = list[j], list[i]
	}
}

// Name is "pollux".
func (*Pollux) Name() string { return "pollux" }

// Elastic says Pollux's jobs choose their batch sizes (NewElasticJob).
func (*Pollux) Elastic() bool { return true }

// Constants of the search and its objectives (§8).
const (
	// resetRow, dropRow and dropNode are the mutation's chances: a job's
	// row back to its current allocation; a job's row thinned, each node
	// emptied with dropNode.
	resetRow, dropRow, dropNode = 0.1, 0.1, 0.1
	// restartCost is the seconds a restart is worth in the penalty
	// max(age − restartCost·restarts, 0)/(age + restartCost) on a job whose
	// allocation changes (the restart delay).
	restartCost = 30
	// maxNodesPerJob bounds the nodes one job spans.
	maxNodesPerJob = 16
	// speedupFloor keeps the harmonic mean finite when a job gets nothing.
	speedupFloor = 1e-3
)

// genome is an allocation as the search breeds it: replica counts,
// job-major (row j is job j's count on each node), a byte each (a node has
// at most 255 GPUs here), so that copying and comparing them is cheap.
type genome []uint8

// individual is one allocation the search holds, its two objectives
// (minimised) and its rank and crowding in the population.
type individual struct {
	x        genome
	obj      [2]float64
	rank     int
	crowding float64
	// survived marks the members survive kept in the last generation;
	// the others are bred over (search.spare).
	survived bool
}

// search is one interval's problem.
type search struct {
	p     *Pollux
	jobs  []*Job
	nodes int
	// gpus is how many GPUs of each node the jobs may use, total all of them.
	gpus    []int
	total   int
	base    genome
	maxrep  []int
	speedup []func(n, r int) float64
	// kept is each job's speedup factor when its allocation changes: the
	// restart penalty max(age − restartCost·restarts, 0)/(age + restartCost).
	kept []float64
	// scratch is the buffers the search's steps reuse: it breeds tens of
	// thousands of allocations an interval, and allocating each step's
	// afresh was a tenth of a run's time in the garbage collector.
	scratch searchScratch
	// spare are members no generation kept, their allocations written
	// over by the next children (child): with a new allocation per child
	// the collector's work was a quarter of a run (a run took about a
	// quarter less with GOGC=400; with spare members, GOGC changes
	// nothing).
	spare []*individual
}

// searchScratch is a search's reusable buffers, each sized on first use.
type searchScratch struct {
	used   genome // evaluate: the nodes an allocation uses (nonzero)
	free   []int  // mutate: the nodes with a GPU free
	jobsOn []int  // mutate: the jobs holding a replica on each node
	load   []int  // mutate, repair: the replicas on each node
	owner  []int  // repair: the job spanning nodes that holds each node
	perm   []int  // repair: the nodes in random order
	seen   genomeSet
	rank   ranker
}

// buffer is b with n elements, zeroed, reallocated only when too short.
func buffer[S ~[]T, T any](b *S, n int) S {
	if cap(*b) < n {
		*b = make(S, n)
	}
	*b = (*b)[:n]
	clear(*b)
	return *b
}

// Allocate is one interval of §8.
func (p *Pollux) Allocate(t int, active []*Job, c Cluster, current Alloc) (Alloc, error) {
	jobs := slices.Clone(active)
	// Job order: least attained service first, then the earliest submitted.
	slices.SortStableFunc(jobs, func(a, b *Job) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Submit, b.Submit))
	})
	if c.GPUsPerNode > 255 {
		return nil, fmt.Errorf("pollux: %d GPUs per node; the search counts at most 255", c.GPUsPerNode)
	}
	total := c.TotalGPUs()
	gpus := make([]int, c.Nodes)
	for n := range gpus {
		gpus[n] = c.GPUs(n)
	}
	s := &search{p: p, jobs: jobs, nodes: c.Nodes, gpus: gpus, total: total,
		base: make(genome, len(jobs)*c.Nodes), maxrep: make([]int, len(jobs)), speedup: make([]func(n, r int) float64, len(jobs)), kept: make([]float64, len(jobs))}
	fair := (total + len(jobs) - 1) / len(jobs)
	for i, j := range jobs {
		for _, n := range current[j.Name] {
			s.base[i*c.Nodes+n]++
		}
		switch {
		case j.elastic.fixed > 0:
			s.maxrep[i] = 1
		default:
			s.maxrep[i] = min(max(2*j.maxProfiledReplicas(), 1), total, j.app.Bmax/j.app.MinLocal)
		}
		s.speedup[i] = speedupOf(j, fair, c.Nodes, total)
		age := float64(t - j.Submit)
		s.kept[i] = math.Max(age-restartCost*float64(max(j.Restarts, 0)), 0) / (age + restartCost)
	}
	// The first population: the last interval's, each row remapped to
	// this interval's jobs (a new job's empty), or the allocation now.
	var pop []*individual
	if p.prev == nil {
		pop = append(pop, &individual{x: slices.Clone(s.base)})
	}
	for _, m := range p.prev {
		x := make(genome, len(s.base))
		for i, j := range jobs {
			copy(x[i*c.Nodes:(i+1)*c.Nodes], m[j.Name])
		}
		pop = append(pop, &individual{x: x})
	}
	for _, ind := range pop {
		s.repair(ind.x)
		s.evaluate(ind)
	}
	pop = s.survive(dedupe(pop), p.Population)
	for range p.Generations {
		merged := append(pop, s.offspring(pop)...)
		for _, ind := range merged {
			ind.survived = false
		}
		pop = s.survive(merged, p.Population)
		for _, ind := range pop {
			ind.survived = true
		}
		for _, ind := range merged {
			if !ind.survived {
				s.spare = append(s.spare, ind)
			}
		}
	}
	// The answer: of the first front, the best for objective 1.
	var best *individual
	for _, ind := range pop {
		if ind.rank == 0 && (best == nil || ind.obj[0] < best.obj[0]) {
			best = ind
		}
	}
	// The next interval starts from this one's non-dominated allocations
	// (pymoo's result.X).
	p.prev = p.prev[:0]
	for _, ind := range pop {
		if ind.rank != 0 {
			continue
		}
		m := map[string]genome{}
		for i, j := range jobs {
			m[j.Name] = slices.Clone(ind.x[i*c.Nodes : (i+1)*c.Nodes])
		}
		p.prev = append(p.prev, m)
	}
	out := Alloc{}
	for i, j := range jobs {
		var list []int
		for n := range c.Nodes {
			for range best.x[i*c.Nodes+n] {
				list = append(list, n)
			}
		}
		if len(list) > 0 {
			out[j.Name] = list
		}
	}
	return out, nil
}

// speedupOf is a job's speedup function for this interval, relative to
// the fair share (one node, fair replicas): r/fair before it has a model;
// then its best goodput on (n, r) over its best on the fair share,
// memoised for n ≤ nodes, r ≤ replicas (and the candidates of each r).
// The memo outlives the interval while the job's model and the fair
// share stay the same (speedupMemo).
func speedupOf(j *Job, fair, nodes, replicas int) func(n, r int) float64 {
	if j.elastic.perf == nil {
		return func(_, r int) float64 { return float64(r) / float64(fair) }
	}
	m := j.goodputModel()
	key := speedupKey{model: m, fair: fair, nodes: nodes, replicas: replicas}
	sm := j.elastic.speedups
	if sm == nil || sm.key != key {
		sm = &speedupMemo{key: key, memo: make([]float64, (nodes+1)*(replicas+1)), choices: make([][]batchChoice, replicas+1)}
		sm.base, _ = m.best(1, fair)
		for i := range sm.memo {
			sm.memo[i] = -1
		}
		j.elastic.speedups = sm
	}
	base, memo, choices := sm.base, sm.memo, sm.choices
	return func(n, r int) float64 {
		if r == 0 {
			return 0
		}
		at := n*(replicas+1) + r
		if n > nodes || r > replicas {
			at = -1
		} else if v := memo[at]; v >= 0 {
			return v
		}
		var g float64
		if r <= replicas {
			if choices[r] == nil {
				choices[r] = m.choices(r)
			}
			g, _ = m.bestOf(n, r, choices[r])
		} else {
			g, _ = m.best(n, r)
		}
		v := float64(r)
		if base > 0 {
			v = g / base
		}
		if at >= 0 {
			memo[at] = v
		}
		return v
	}
}

// speedupMemo is a job's speedups as speedupOf found them, kept from one
// interval to the next: they are a function of its goodput model (which
// changes as the job is observed: its fit, its gradient statistics), the
// fair share and the cluster's size alone, and the search asks the same
// few hundred of them interval after interval.
type speedupMemo struct {
	key     speedupKey
	base    float64
	memo    []float64
	choices [][]batchChoice
}

// speedupKey is what a job's speedups depend on. A model whose numbers
// include a NaN never equals itself: its memo is made afresh.
type speedupKey struct {
	model                 goodputModel
	fair, nodes, replicas int
}

// evaluate sets ind's objectives: 1, minus the harmonic mean of the jobs'
// speedups scaled by nodes/GPUs (plus speedupFloor), a job whose row
// changes weighed down by the restart penalty; 2, minus the cluster's
// utility, the speedups summed over the GPUs of the nodes in use.
func (s *search) evaluate(ind *individual) {
	var inverse, sum float64
	used := buffer(&s.scratch.used, s.nodes)
	total, inUseGPUs := float64(s.total), 0
	for i := range s.jobs {
		row := ind.x[i*s.nodes : (i+1)*s.nodes]
		n, r := rowCounts(row)
		if n > 0 {
			orInto(used, row)
		}
		sp := s.speedup[i](n, r)
		sum += sp
		if !slices.Equal(row, s.base[i*s.nodes:(i+1)*s.nodes]) {
			sp *= s.kept[i]
		}
		inverse += 1 / (sp/total*float64(s.nodes) + speedupFloor)
	}
	inUse := 0
	for k, u := range used {
		if u > 0 {
			inUse++
			inUseGPUs += s.gpus[k]
		}
	}
	ind.obj[0] = -float64(len(s.jobs)) / inverse
	ind.obj[1] = 0
	if inUse > 0 && inUseGPUs > 0 {
		ind.obj[1] = -sum / float64(inUseGPUs)
	}
}

// repair makes x an allocation the cluster can hold (§8): one job that
// spans nodes per node (the first in job order keeps it), each job within
// its replica limit (taken off nodes in random order) and maxNodesPerJob,
// each node within its GPUs (in job order).
func (s *search) repair(x genome) {
	owner := buffer(&s.scratch.owner, s.nodes)
	for k := range owner {
		owner[k] = -1
	}
	load := buffer(&s.scratch.load, s.nodes)
	// Row by row: a row's spanning rule reads only the rows before it, and
	// its limits only itself, so each row is done in one visit (the draws
	// come in the same order as rule by rule over all rows).
	for i := range s.jobs {
		row := x[i*s.nodes : (i+1)*s.nodes]
		spans, replicas := rowCounts(row)
		if spans >= 2 {
			dropped := false
			for k, c := range row {
				if c == 0 {
					continue
				}
				if owner[k] < 0 {
					owner[k] = i
				} else {
					row[k], dropped = 0, true
				}
			}
			if dropped {
				spans, replicas = rowCounts(row)
			}
		}
		if excess := replicas - s.maxrep[i]; excess > 0 {
			// rand.Rand's Perm's draws, into a reused buffer.
			perm := buffer(&s.scratch.perm, s.nodes)
			for k := range perm {
				perm[k] = k
			}
			s.p.shuffle(perm)
			for _, k := range perm {
				if excess <= 0 {
					break
				}
				take := min(int(row[k]), excess)
				row[k] -= uint8(take)
				excess -= take
			}
			spans = countNonzero(row)
		}
		for ; spans > maxNodesPerJob; spans-- {
			k := s.p.intN(s.nodes)
			for row[k] == 0 {
				k = (k + 1) % s.nodes
			}
			row[k] = 0
		}
		addLoad(load, row)
	}
	for k := range s.nodes {
		if load[k] <= s.gpus[k] {
			continue // every count fits as it is
		}
		left := s.gpus[k]
		for i := range s.jobs {
			c := &x[i*s.nodes+k]
			*c = uint8(min(int(*c), left))
			left -= int(*c)
		}
	}
}

// offspring breeds up to a population's worth of new allocations:
// parents by binary tournament, one-point crossover over jobs, mutation,
// repair; duplicates of the population or of each other are dropped (as
// pymoo does, trying at most 100 times).
func (s *search) offspring(pop []*individual) []*individual {
	want := s.p.Population
	seen := &s.scratch.seen
	seen.reset()
	for _, ind := range pop {
		seen.add(ind.x)
	}
	var out []*individual
	for try := 0; len(out) < want && try < 100; try++ {
		for len(out) < want {
			a, b := s.tournament(pop), s.tournament(pop)
			c1, c2 := s.crossover(a.x, b.x)
			added := false
			for _, c := range []*individual{c1, c2} {
				s.mutate(c.x)
				s.repair(c.x)
				if len(out) < want && seen.add(c.x) {
					s.evaluate(c)
					out = append(out, c)
					added = true
				} else {
					s.spare = append(s.spare, c)
				}
			}
			if !added {
				break
			}
		}
	}
	return out
}

// child is a new member whose allocation is a copy of x: a spare one
// written over, or a new one.
func (s *search) child(x genome) *individual {
	if n := len(s.spare); n > 0 {
		c := s.spare[n-1]
		s.spare = s.spare[:n-1]
		copy(c.x, x)
		c.obj, c.rank, c.crowding, c.survived = [2]float64{}, 0, 0, false
		return c
	}
	return &individual{x: slices.Clone(x)}
}

// tournament picks the better of two random members: the one that
// dominates, else the more crowding distance, else either at random.
func (s *search) tournament(pop []*individual) *individual {
	a, b := pop[s.p.intN(len(pop))], pop[s.p.intN(len(pop))]
	switch {
	case dominates(a, b):
		return a
	case dominates(b, a):
		return b
	case a.crowding != b.crowding:
		if a.crowding > b.crowding {
			return a
		}
		return b
	}
	if s.p.intN(2) == 0 {
		return a
	}
	return b
}

// crossoverChance is how often a mating crosses over (pymoo's default);
// otherwise the children are the parents' copies.
const crossoverChance = 0.9

// crossover swaps the rows of the jobs before a random point (0 to
// jobs−1, so sometimes none).
func (s *search) crossover(a, b genome) (*individual, *individual) {
	c1, c2 := s.child(a), s.child(b)
	if s.p.uniform() >= crossoverChance {
		return c1, c2
	}
	at := s.p.intN(len(s.jobs)) * s.nodes
	copy(c1.x[:at], b[:at])
	copy(c2.x[:at], a[:at])
	return c1, c2
}

// mutate changes x in place, job by job: back to the job's current
// allocation (resetRow); nodes emptied (dropRow, each dropNode); then, on
// nodes with a free GPU, a count raised to a random value from itself to
// the node's GPUs. The reference's chances (its _mutation) are shares
// taken over the jobs, not over the nodes: each job's count on a free
// node is raised with chance 1/(jobs), or'd with 1/(jobs already on that
// node) where the job is one of them, both counted after the resets and
// drops and before any count is raised. With many jobs and few free
// nodes, a child so changes a few counts, not one per job.
func (s *search) mutate(x genome) {
	load := buffer(&s.scratch.load, s.nodes)
	for i := range s.jobs {
		row := x[i*s.nodes : (i+1)*s.nodes]
		if s.p.uniform() < resetRow {
			copy(row, s.base[i*s.nodes:(i+1)*s.nodes])
		}
		if s.p.uniform() < dropRow {
			for k := range row {
				if s.p.uniform() < dropNode {
					row[k] = 0
				}
			}
		}
		addLoad(load, row)
	}
	free := s.scratch.free[:0]
	for k, used := range load {
		if used < s.gpus[k] {
			free = append(free, k)
		}
	}
	s.scratch.free = free
	if len(free) == 0 {
		return
	}
	// jobsOn: how many jobs hold a replica on each free node, before any
	// count is raised.
	jobsOn := buffer(&s.scratch.jobsOn, s.nodes)
	for i := range s.jobs {
		row := x[i*s.nodes : (i+1)*s.nodes]
		for _, k := range free {
			if row[k] > 0 {
				jobsOn[k]++
			}
		}
	}
	p1 := 1 / float64(len(s.jobs))
	for i := range s.jobs {
		row := x[i*s.nodes : (i+1)*s.nodes]
		for _, k := range free {
			p := p1
			if row[k] > 0 {
				p2 := 1 / float64(jobsOn[k])
				p = p1 + p2 - p1*p2
			}
			if s.p.uniform() < p {
				row[k] += uint8(s.p.intN(max(s.gpus[k]-int(row[k]), 0) + 1))
			}
		}
	}
}

// survive keeps the best size of pop: whole fronts of non-dominated
// members, then the last front's most crowded-apart.
func (s *search) survive(pop []*individual, size int) []*individual {
	rk := &s.scratch.rank
	fronts := rk.fronts(pop)
	out := make([]*individual, 0, size)
	for r, front := range fronts {
		for _, ind := range front {
			ind.rank = r
		}
		rk.crowd(front)
		if len(out)+len(front) <= size {
			out = append(out, front...)
			continue
		}
		// The most crowded-apart first, ties in front order.
		byCrowding := rk.indexed(front)
		slices.SortFunc(byCrowding, func(a, b ranked) int {
			return cmp.Or(cmp.Compare(b.ind.crowding, a.ind.crowding), cmp.Compare(a.at, b.at))
		})
		for _, m := range byCrowding[:size-len(out)] {
			out = append(out, m.ind)
		}
		break
	}
	return out
}

// dominates says a is no worse than b in both objectives and better in one.
func dominates(a, b *individual) bool {
	return a.obj[0] <= b.obj[0] && a.obj[1] <= b.obj[1] && (a.obj[0] < b.obj[0] || a.obj[1] < b.obj[1])
}

// ranker sorts a population into non-dominated fronts and sets crowding
// distances, in buffers it reuses from one generation to the next. Its
// sorts order ties by position (ranked.at), which gives what a stable
// sort gives: the search's outcome depends on the order of equals.
type ranker struct {
	keys   []objKeys
	order  []ranked
	front  [][]*individual
	unique []*individual
	seen   map[[2]float64]bool
}

// ranked is a member and its position in the list being sorted.
type ranked struct {
	ind *individual
	at  int
}

// indexed is list with positions, in a buffer of r's.
func (r *ranker) indexed(list []*individual) []ranked {
	r.order = r.order[:0]
	for i, ind := range list {
		r.order = append(r.order, ranked{ind, i})
	}
	return r.order
}

// fronts sorts pop into fronts. With two objectives this takes O(n log n)
// (Jensen's sort): visited by objective 1, then 2, a member joins the
// first front whose latest member does not dominate it (within a front
// objective 2 only falls, so the latest member is the one to ask). The
// fronts are r's until its next call. Within a front the members keep
// the visit's order: by objective 1, then 2 (crowd relies on it).
func (r *ranker) fronts(pop []*individual) [][]*individual {
	keys := r.keys[:0]
	for i, ind := range pop {
		keys = append(keys, objKeys{k0: objKey(ind.obj[0]), k1: objKey(ind.obj[1]), at: i, ind: ind})
	}
	r.keys = keys
	sortObjKeys(keys)
	fronts := r.front[:0]
	for _, m := range keys {
		ind := m.ind
		k, _ := slices.BinarySearchFunc(fronts, ind, func(f []*individual, ind *individual) int {
			if dominates(f[len(f)-1], ind) {
				return -1
			}
			return 1
		})
		if k == len(fronts) {
			if k < cap(fronts) {
				fronts = fronts[:k+1]
				fronts[k] = fronts[k][:0]
			} else {
				fronts = append(fronts, nil)
			}
		}
		fronts[k] = append(fronts[k], ind)
	}
	r.front = fronts
	return fronts
}

// objKeys is a member as fronts sorts it: its objectives as integers
// ordered as the floats are (objKey), ties by its position (at).
type objKeys struct {
	k0, k1 uint64
	at     int
	ind    *individual
}

// objKey is x as an integer whose order is cmp.Compare's over float64s:
// NaN before every number, −0 equal to +0. A number's bits order
// non-negative floats as integers; a negative one's, complemented, order
// the negatives; the top bit set on the non-negatives puts them above.
// Every number's key is above 0, NaN's.
func objKey(x float64) uint64 {
	switch {
	case x != x:
		return 0
	case x == 0:
		x = 0 // −0 is +0
	}
	b := math.Float64bits(x)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// before says a sorts before b: by objective 1, then 2, then position.
func (a *objKeys) before(b *objKeys) bool {
	if a.k0 != b.k0 {
		return a.k0 < b.k0
	}
	if a.k1 != b.k1 {
		return a.k1 < b.k1
	}
	return a.at < b.at
}

// sortObjKeys sorts keys by before: a quicksort (the median of three as
// pivot) down to runs of 12, then an insertion sort. Positions make
// every key distinct, so any correct sort gives the one order the
// search's outcome depends on; this one compares inline, where
// slices.SortFunc called a function value for each comparison (a
// seventh of a run's time).
func sortObjKeys(keys []objKeys) {
	for len(keys) > 12 {
		last := len(keys) - 1
		mid := last / 2
		// The median of the first, middle and last to the end, as pivot.
		if keys[mid].before(&keys[0]) {
			keys[0], keys[mid] = keys[mid], keys[0]
		}
		if keys[last].before(&keys[0]) {
			keys[0], keys[last] = keys[last], keys[0]
		}
		if keys[last].before(&keys[mid]) {
			keys[mid], keys[last] = keys[last], keys[mid]
		}
		keys[mid], keys[last] = keys[last], keys[mid]
		pivot := keys[last]
		// Lomuto's partition: keys before the pivot to the front.
		at := 0
		for i := range last {
			if keys[i].before(&pivot) {
				keys[i], keys[at] = keys[at], keys[i]
				at++
			}
		}
		keys[at], keys[last] = keys[last], keys[at]
		// The shorter side by recursion, the longer in the loop: a depth
		// of log n at most.
		if at < last-at {
			sortObjKeys(keys[:at])
			keys = keys[at+1:]
		} else {
			sortObjKeys(keys[at+1:])
			keys = keys[:at]
		}
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j].before(&keys[j-1]); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}

// crowd sets each member's crowding distance within its front: the sum
// over objectives of the normalised gap between its neighbours, infinite
// at the ends; a member whose objectives repeat an earlier one's gets 0
// (pymoo's rule).
func (r *ranker) crowd(front []*individual) {
	for _, ind := range front {
		ind.crowding = 0
	}
	unique, monotone := r.distinct(front)
	if len(unique) <= 2 {
		for _, ind := range unique {
			ind.crowding = math.Inf(1)
		}
		return
	}
	if monotone {
		// Ordered by objective 1 already, and by objective 2 in reverse:
		// the two sorts below would leave them so.
		n := len(unique)
		first, last := unique[0], unique[n-1]
		first.crowding, last.crowding = math.Inf(1), math.Inf(1)
		if lo, hi := first.obj[0], last.obj[0]; hi != lo {
			for i := 1; i < n-1; i++ {
				unique[i].crowding += (unique[i+1].obj[0] - unique[i-1].obj[0]) / (hi - lo)
			}
		}
		if lo, hi := last.obj[1], first.obj[1]; hi != lo {
			// Ascending by objective 2, the member at i is unique[n-1-i].
			for i := 1; i < n-1; i++ {
				unique[n-1-i].crowding += (unique[n-2-i].obj[1] - unique[n-i].obj[1]) / (hi - lo)
			}
		}
		return
	}
	order := r.indexed(unique)
	for m := range 2 {
		// By objective m, ties in the order the last sort left.
		for i := range order {
			order[i].at = i
		}
		slices.SortFunc(order, func(a, b ranked) int {
			return cmp.Or(cmp.Compare(a.ind.obj[m], b.ind.obj[m]), cmp.Compare(a.at, b.at))
		})
		first, last := order[0].ind, order[len(order)-1].ind
		lo, hi := first.obj[m], last.obj[m]
		first.crowding, last.crowding = math.Inf(1), math.Inf(1)
		if hi == lo {
			continue
		}
		for i := 1; i < len(order)-1; i++ {
			order[i].ind.crowding += (order[i+1].ind.obj[m] - order[i-1].ind.obj[m]) / (hi - lo)
		}
	}
}

// distinct is front without the members whose objectives repeat an
// earlier one's, and whether it runs strictly up in objective 1 and
// strictly down in objective 2 (as a front fronts made does, with no
// NaN). A front ordered by objective 1, then 2, has its repeats next to
// each other; any other is sifted through a set.
func (r *ranker) distinct(front []*individual) (unique []*individual, monotone bool) {
	unique = r.unique[:0]
	defer func() { r.unique = unique }()
	ordered := true
	for i, ind := range front {
		o := ind.obj
		if o[0] != o[0] || o[1] != o[1] {
			ordered = false
			break
		}
		if i > 0 {
			if p := front[i-1].obj; p[0] > o[0] || (p[0] == o[0] && p[1] > o[1]) {
				ordered = false
				break
			}
		}
	}
	if ordered {
		monotone = true
		for i, ind := range front {
			if i > 0 && front[i-1].obj == ind.obj {
				continue
			}
			if n := len(unique); n > 0 {
				p := unique[n-1].obj
				monotone = monotone && p[0] < ind.obj[0] && p[1] > ind.obj[1]
			}
			unique = append(unique, ind)
		}
		return unique, monotone
	}
	if r.seen == nil {
		r.seen = map[[2]float64]bool{}
	}
	clear(r.seen)
	for _, ind := range front {
		if !r.seen[ind.obj] {
			r.seen[ind.obj] = true
			unique = append(unique, ind)
		}
	}
	return unique, false
}

// genomeSet is a set of allocations by content, without a string copy of
// each (offspring asks it of every child bred): by a hash, the rare
// allocation whose hash another holds kept apart.
type genomeSet struct {
	seed  maphash.Seed
	first map[uint64]genome
	more  []genome
}

// reset empties the set.
func (g *genomeSet) reset() {
	if g.first == nil {
		g.seed, g.first = maphash.MakeSeed(), map[uint64]genome{}
	}
	clear(g.first)
	g.more = g.more[:0]
}

// add puts x in the set and reports whether it was not there already. The
// set keeps x itself: x must not change while the set holds it.
func (g *genomeSet) add(x genome) bool {
	h := maphash.Bytes(g.seed, x)
	y, ok := g.first[h]
	if !ok {
		g.first[h] = x
		return true
	}
	if bytes.Equal(x, y) {
		return false
	}
	for _, z := range g.more {
		if bytes.Equal(x, z) {
			return false
		}
	}
	g.more = append(g.more, x)
	return true
}

// dedupe drops repeated allocations, keeping the first.
func dedupe(pop []*individual) []*individual {
	var seen genomeSet
	seen.reset()
	return slices.DeleteFunc(pop, func(ind *individual) bool { return !seen.add(ind.x) })
}

// countNonzero is how many nodes row uses.
func countNonzero(row genome) int {
	n, _ := rowCounts(row)
	return n
}

// rowCounts is how many nodes row uses and its replicas, eight counts at
// a time (the search asks them of every row of every allocation it
// breeds).
func rowCounts(row genome) (nodes, replicas int) {
	i := 0
	for ; i+8 <= len(row); i += 8 {
		w := binary.LittleEndian.Uint64(row[i:])
		if w == 0 {
			continue
		}
		// A byte's top bit, after adding 0x7f to its low seven bits and
		// or-ing the byte back, is set exactly when the byte is not 0 (the
		// sum stays under 0x100: no carry into the next byte).
		nodes += bits.OnesCount64((((w & low7) + low7) | w) &^ low7)
		// Adjacent bytes added into four 16-bit lanes (each at most 510),
		// then the lanes summed into the top one by the multiplication (at
		// most 2040: no lane overflows).
		lanes := (w & evenBytes) + ((w >> 8) & evenBytes)
		replicas += int((lanes * 0x0001000100010001) >> 48)
	}
	for _, c := range row[i:] {
		if c > 0 {
			nodes++
			replicas += int(c)
		}
	}
	return nodes, replicas
}

// Masks of rowCounts: each byte's low seven bits; the even bytes.
const (
	low7      = 0x7f7f7f7f7f7f7f7f
	evenBytes = 0x00ff00ff00ff00ff
)

// addLoad adds row's counts to load, node by node, skipping eight empty
// nodes at a time (most rows use one or two nodes).
func addLoad(load []int, row genome) {
	i := 0
	for ; i+8 <= len(row); i += 8 {
		if binary.LittleEndian.Uint64(row[i:]) == 0 {
			continue
		}
		for k := i; k < i+8; k++ {
			load[k] += int(row[k])
		}
	}
	for ; i < len(row); i++ {
		load[i] += int(row[i])
	}
}

// orInto makes dst the bytewise or of dst and row (of the same length).
func orInto(dst, row genome) {
	i := 0
	for ; i+8 <= len(row); i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(dst[i:])|binary.LittleEndian.Uint64(row[i:]))
	}
	for ; i < len(row); i++ {
		dst[i] |= row[i]
	}
}
