package gavel

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/gpusched/gpusched/internal/pyrand"
)

// Round is the length of a scheduling round in seconds (the reference's
// -i 360; §3).
const Round = 360.0

// resetInterval is the least time in seconds between two recomputations
// of the allocation (the reference's minimum time between allocation
// resets; §5.2.1).
const resetInterval = 1920.0

// halfRound is what every job's time on a type is reset to (round / 2,
// §5.1): a job that has not run yet counts as having had half a round.
const halfRound = Round / 2

// ID names a job (B < 0) or a packed pair of jobs A < B (§7.4).
type ID struct{ A, B int }

// Single is the ID of job j alone.
func Single(j int) ID { return ID{j, -1} }

// Pair is the ID of jobs a and b packed together, the lower first.
func Pair(a, b int) ID { return ID{min(a, b), max(a, b)} }

// IsPair reports whether id names a packed pair.
func (id ID) IsPair() bool { return id.B >= 0 }

// Members are the jobs id names: one, or the pair's two.
func (id ID) Members() []int {
	if id.IsPair() {
		return []int{id.A, id.B}
	}
	return []int{id.A}
}

// compareIDs orders ids as the reference does: every single before every
// pair, singles by id, pairs by their first then second job.
func compareIDs(a, b ID) int {
	if a.IsPair() != b.IsPair() {
		if a.IsPair() {
			return 1
		}
		return -1
	}
	return cmp.Or(cmp.Compare(a.A, b.A), cmp.Compare(a.B, b.B))
}

// Allocation is a policy's output: for each job or pair, the fraction of
// time it should have on each worker type. Presence matters: a job absent
// from it arrived after it was computed.
type Allocation map[ID][numTypes]float64

// Task is one job's (or pair's) work in one round: on Scale GPUs of type
// Type, Steps[i] steps of member i, finishing at Finish (§3 step 6).
type Task struct {
	ID     ID
	Type   int
	GPUs   []int
	Steps  [2]float64
	Finish float64
}

// entry is one job's or pair's bookkeeping in the mechanism (§5.1): the
// time it had on each type since the last reset, its priority and its
// deficit.
type entry struct {
	id       ID
	jobTime  [numTypes]float64
	priority [numTypes]float64
	deficit  [numTypes]float64
}

// jobState is a generated job and its progress.
type jobState struct {
	Job
	done      float64
	completed bool
	// end is the finish of its last task: JCT = end − Arrival.
	end float64
}

// Rounds is Gavel's scheduling mechanism (§5), stepped: jobs are added as
// they arrive, each finished task is accounted, and Schedule turns the
// policy's allocation into the next round's tasks. It is the deciding
// half of the reference simulator; Run drives it on simulated time.
type Rounds struct {
	data     *Data
	counts   [numTypes]int
	policy   Policy
	packing  bool
	shuffles bool
	fifo     bool
	shuffler *pyrand.Rand

	jobs    map[int]*jobState
	active  []int
	entries []*entry
	byID    map[ID]*entry

	workerTime [numTypes]float64
	alloc      Allocation
	lastReset  float64
	needUpdate bool
	// placed is where each id ran last round (type, GPUs), for keeping
	// GPUs from round to round (§5.2.5).
	placed map[ID]Task
}

// NewRounds is the mechanism for a cluster of counts GPUs per type under
// policy, with the worker-type shuffler seeded seed+5 (§0).
func NewRounds(data *Data, counts [numTypes]int, policy Policy, seed uint64) *Rounds {
	name := policy.Name()
	return &Rounds{
		data: data, counts: counts, policy: policy,
		packing:  strings.Contains(name, "Packing"),
		shuffles: !strings.Contains(name, "Perf") && !strings.Contains(name, "Packing"),
		fifo:     strings.HasPrefix(name, "FIFO"),
		shuffler: pyrand.New(seed + 5),
		jobs:     map[int]*jobState{}, byID: map[ID]*entry{}, placed: map[ID]Task{},
		needUpdate: true, // registering the workers asks for an allocation
	}
}

// registered reports whether the cluster has GPUs of type w (a type with
// none is never registered).
func (r *Rounds) registered(w int) bool { return r.counts[w] > 0 }

// Add takes a job that has just arrived (§5.1); in packing mode it also
// creates its pairs with every active job of the same scale factor.
func (r *Rounds) Add(job Job) {
	r.jobs[job.ID] = &jobState{Job: job}
	r.addEntry(Single(job.ID), halfRound)
	if r.packing {
		for _, i := range r.active {
			if r.jobs[i].Scale == job.Scale {
				r.addEntry(Pair(i, job.ID), 0)
			}
		}
	}
	r.active = append(r.active, job.ID)
	r.needUpdate = true
}

// addEntry appends id's bookkeeping with its time on every registered type.
func (r *Rounds) addEntry(id ID, jobTime float64) {
	e := &entry{id: id}
	for w := range numTypes {
		if r.registered(w) {
			e.jobTime[w] = jobTime
		}
	}
	r.entries = append(r.entries, e)
	r.byID[id] = e
}

// rates are id's steps/s on type w: a single's alone, a pair's packed
// (rates[1] is 0 for a single).
func (r *Rounds) rates(id ID, w int) [2]float64 {
	a := r.jobs[id.A]
	s := scaleIndex(a.Scale)
	if !id.IsPair() {
		return [2]float64{r.data.alone[w][a.Template][s], 0}
	}
	return r.data.packed[w][a.Template][r.jobs[id.B].Template][s]
}

// runnable reports whether id can run on type w: every member's rate
// there is positive.
func (r *Rounds) runnable(id ID, w int) bool {
	rt := r.rates(id, w)
	return rt[0] > 0 && (!id.IsPair() || rt[1] > 0)
}

// Finish accounts a task that finished, its round having started at
// roundStart (§3 step 3), and returns the jobs it completed. busy, if not
// nil, is added the task's execution time on each of its GPUs.
func (r *Rounds) Finish(t Task, roundStart float64, busy []float64) []int {
	exec := t.Finish - roundStart
	var completed []int
	for i, j := range t.ID.Members() {
		js := r.jobs[j]
		js.done += t.Steps[i]
		js.end = t.Finish
		if js.TotalSteps-js.done <= 0 {
			js.completed = true
			completed = append(completed, j)
		}
	}
	if e := r.byID[t.ID]; e != nil {
		e.jobTime[t.Type] += exec
	}
	r.workerTime[t.Type] += exec
	if busy != nil {
		for _, g := range t.GPUs {
			busy[g] += exec
		}
	}
	for _, j := range completed {
		r.remove(j)
	}
	return completed
}

// remove drops a completed job and every pair it is in.
func (r *Rounds) remove(j int) {
	r.active = slices.DeleteFunc(r.active, func(i int) bool { return i == j })
	r.entries = slices.DeleteFunc(r.entries, func(e *entry) bool {
		if e.id.A == j || e.id.B == j {
			delete(r.byID, e.id)
			return true
		}
		return false
	})
	r.needUpdate = true
}

// updatePriorities is §5.2.1: when the allocation must be recomputed and
// the last reset is old enough, deficits are settled against the old
// allocation, times reset and the policy asked again; then every entry's
// priority on every type is its allocation over the share it has had.
func (r *Rounds) updatePriorities(now float64) {
	if r.needUpdate && (now-r.lastReset >= resetInterval || r.lastReset == 0) {
		elapsed := now - r.lastReset
		for w := range numTypes {
			if !r.registered(w) {
				continue
			}
			r.workerTime[w] = 0
			for _, e := range r.entries {
				received := e.jobTime[w] - halfRound
				should := 0.0
				if x, ok := r.alloc[e.id]; ok {
					should = x[w] * elapsed
				}
				e.deficit[w] += should - received
				e.jobTime[w] = halfRound
				r.workerTime[w] += halfRound
			}
		}
		r.lastReset = now
		r.alloc = r.policy.Allocate(r.view(now))
		r.needUpdate = false
	}
	for w := range numTypes {
		if !r.registered(w) {
			continue
		}
		for _, e := range r.entries {
			fraction := 0.0
			if r.workerTime[w] != 0 {
				fraction = e.jobTime[w] / r.workerTime[w]
			}
			x, ok := r.alloc[e.id]
			switch {
			case !ok || x[w] == 0 || !r.runnable(e.id, w):
				e.priority[w] = 0
			case fraction > 0:
				e.priority[w] = x[w] / fraction
			default:
				// 1e9 is the reference's stand-in for "infinitely
				// behind": an allocated job that has had no time yet.
				e.priority[w] = x[w] * 1e9
			}
		}
	}
}

// view is what a policy sees at now: the active jobs in id order.
func (r *Rounds) view(now float64) *View {
	v := &View{Now: now, Counts: r.counts, data: r.data}
	for _, j := range r.active {
		js := r.jobs[j]
		jv := JobView{ID: j, Template: js.Template, Scale: js.Scale, Arrival: js.Arrival, Remaining: js.TotalSteps - js.done}
		for w := range numTypes {
			jv.Rates[w] = r.data.alone[w][js.Template][scaleIndex(js.Scale)]
		}
		v.Jobs = append(v.Jobs, jv)
	}
	return v
}

// Schedule is one round at now (§5.2): priorities, the worker-type order,
// the candidate list, the greedy selection, placement and the tasks.
func (r *Rounds) Schedule(now float64) []Task {
	r.updatePriorities(now)
	order := make([]int, 0, numTypes)
	for _, w := range []int{V100, P100, K80} {
		if r.registered(w) {
			order = append(order, w)
		}
	}
	if r.shuffles {
		r.shuffler.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	// §5.2.3–4: per type, entries by (priority, deficit, allocation)
	// descending, ties in creation order; then the greedy walk.
	free := r.counts
	selected := map[int]bool{}
	var chosen []Task
	sorted := make([]*entry, len(r.entries))
	for _, w := range order {
		copy(sorted, r.entries)
		slices.SortStableFunc(sorted, func(a, b *entry) int {
			return cmp.Or(cmp.Compare(b.priority[w], a.priority[w]), cmp.Compare(b.deficit[w], a.deficit[w]),
				cmp.Compare(r.allocated(b.id, w), r.allocated(a.id, w)))
		})
		for _, e := range sorted {
			if free[w] == 0 {
				break
			}
			if selected[e.id.A] || (e.id.IsPair() && selected[e.id.B]) || !r.runnable(e.id, w) {
				continue
			}
			if r.fifo && e.priority[w] <= 0 {
				continue
			}
			sf := r.jobs[e.id.A].Scale
			if sf > free[w] {
				continue
			}
			for _, j := range e.id.Members() {
				selected[j] = true
			}
			free[w] -= sf
			chosen = append(chosen, Task{ID: e.id, Type: w})
		}
	}
	return r.place(now, chosen)
}

// allocated is id's allocation on w, 0 when it has none.
func (r *Rounds) allocated(id ID, w int) float64 {
	return r.alloc[id][w]
}

// place gives the chosen their GPUs and work (§5.2.5–6): per type, the
// widest first; a job absent from the allocation was chosen but does not
// run; a job keeps last round's GPUs on the same type when all are free,
// else takes the lowest free ones.
func (r *Rounds) place(now float64, chosen []Task) []Task {
	var tasks []Task
	placed := map[ID]Task{}
	offset := 0
	for w := range numTypes {
		taken := make([]bool, r.counts[w])
		var onType []Task
		for _, t := range chosen {
			if _, ok := r.alloc[t.ID]; ok && t.Type == w {
				onType = append(onType, t)
			}
		}
		slices.SortStableFunc(onType, func(a, b Task) int { return cmp.Compare(r.jobs[b.ID.A].Scale, r.jobs[a.ID.A].Scale) })
		for _, t := range onType {
			sf := r.jobs[t.ID.A].Scale
			t.GPUs = nil
			if prev, ok := r.placed[t.ID]; ok && prev.Type == w && !anyTaken(prev.GPUs, offset, taken) {
				t.GPUs = prev.GPUs
			} else {
				for g := range taken {
					if len(t.GPUs) < sf && !taken[g] {
						t.GPUs = append(t.GPUs, offset+g)
					}
				}
			}
			for _, g := range t.GPUs {
				taken[g-offset] = true
			}
			r.work(now, &t)
			placed[t.ID] = t
			tasks = append(tasks, t)
		}
		offset += r.counts[w]
	}
	r.placed = placed
	return tasks
}

// anyTaken reports whether any of gpus (ids from offset) is taken.
func anyTaken(gpus []int, offset int, taken []bool) bool {
	for _, g := range gpus {
		if taken[g-offset] {
			return true
		}
	}
	return false
}

// work sets a task's steps and finish (§3 step 6, §7.4): each member runs
// a round's whole steps at its rate, or what remains; a pair finishes
// when its slower member does.
func (r *Rounds) work(now float64, t *Task) {
	rates := r.rates(t.ID, t.Type)
	t.Finish = now
	for i, j := range t.ID.Members() {
		js := r.jobs[j]
		steps := math.Min(math.Trunc(rates[i]*Round), js.TotalSteps-js.done)
		t.Steps[i] = steps
		t.Finish = max(t.Finish, now+steps/rates[i])
	}
}
