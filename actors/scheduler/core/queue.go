package core

import (
	"slices"
	"sort"
	"time"

	"github.com/gpusched/gpusched/policy"
)

// waitQueue is the jobs waiting for a placement, in the order of the
// QueueSort in force, and how many each tenant has there (the bound
// Config.TenantQueue holds). Which jobs enter it, and when, is the core's:
// training jobs and replayed ones never do.
type waitQueue struct {
	jobs     []*job
	byTenant map[string]int
	// changes counts the changes to jobs; aged is the last nextAged's
	// answer, good while jobs stay as they were then.
	changes int
	aged    agedMemo
}

// agedMemo is nextAged's answer at from, for age, as of changes.
type agedMemo struct {
	changes  int
	age      time.Duration
	from, at time.Time
	asked    bool
}

func newWaitQueue() *waitQueue { return &waitQueue{byTenant: map[string]int{}} }

// insert puts j in its place by order (after the jobs it does not
// precede: a job equal to others goes after them).
func (q *waitQueue) insert(j *job, order func(a, b *policy.Queued) int) {
	wait := j.queued()
	i := sort.Search(len(q.jobs), func(i int) bool {
		other := q.jobs[i].queued()
		return order(&wait, &other) < 0
	})
	q.jobs = slices.Insert(q.jobs, i, j)
	q.changes++
	j.inQueue = true
	q.byTenant[j.spec.Tenant]++
}

// remove takes j out, if it is there.
func (q *waitQueue) remove(j *job) {
	for i, w := range q.jobs {
		if w == j {
			q.jobs = slices.Delete(q.jobs, i, i+1)
			q.changes++
			j.inQueue = false
			if q.byTenant[j.spec.Tenant]--; q.byTenant[j.spec.Tenant] <= 0 {
				delete(q.byTenant, j.spec.Tenant)
			}
			return
		}
	}
}

// resort puts the jobs in order (after a switch of order).
func (q *waitQueue) resort(order func(a, b *policy.Queued) int) {
	slices.SortFunc(q.jobs, func(a, b *job) int {
		qa, qb := a.queued(), b.queued()
		return order(&qa, &qb)
	})
}

// len is how many jobs wait.
func (q *waitQueue) len() int { return len(q.jobs) }

// of is how many of tenant's jobs wait.
func (q *waitQueue) of(tenant string) int { return q.byTenant[tenant] }

// nextAged is the first instant after now at which a waiting job reaches
// age since its submission (zero: none does). The core asks it after
// every step: the answer is kept until the queue changes or now reaches
// it — until then no job's instant falls between the one asked at and
// now, so the first after now is the same.
func (q *waitQueue) nextAged(now time.Time, age time.Duration) time.Time {
	m := &q.aged
	if m.asked && m.changes == q.changes && m.age == age && !now.Before(m.from) && (m.at.IsZero() || now.Before(m.at)) {
		return m.at
	}
	var next time.Time
	for _, j := range q.jobs {
		if t := j.submitted.Add(age); t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	*m = agedMemo{changes: q.changes, age: age, from: now, at: next, asked: true}
	return next
}
