package core

import (
	"cmp"
	"testing"
	"time"

	"github.com/gpusched/gpusched/policy"
)

// TestTheNextAgingIsTheFirstAfterNowWhateverWasAskedBefore asks
// waitQueue.nextAged at instants that move forward, across the jobs'
// aging instants and across changes of the queue, and checks each answer
// against a walk of the queue made afresh: what it keeps from one asking
// to the next must never change an answer.
func TestTheNextAgingIsTheFirstAfterNowWhateverWasAskedBefore(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const age = 10 * time.Minute
	bySeq := func(a, b *policy.Queued) int { return cmp.Compare(a.Seq, b.Seq) }
	q := newWaitQueue()
	add := func(seq uint64, submitted time.Duration) *job {
		j := &job{id: "j" + time.Duration(seq).String(), seq: seq, submitted: t0.Add(submitted)}
		q.insert(j, bySeq)
		return j
	}
	walk := func(now time.Time) time.Time {
		var next time.Time
		for _, j := range q.jobs {
			if at := j.submitted.Add(age); at.After(now) && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
		return next
	}
	check := func(now time.Duration) {
		t.Helper()
		at := t0.Add(now)
		if got, want := q.nextAged(at, age), walk(at); !got.Equal(want) {
			t.Fatalf("at +%v: next aging %v, want %v", now, got.Sub(t0), want.Sub(t0))
		}
	}
	check(0) // an empty queue: none
	add(1, 0)
	add(2, 3*time.Minute)
	add(3, 7*time.Minute)
	for _, now := range []time.Duration{0, time.Minute, 9 * time.Minute, 10 * time.Minute, 11 * time.Minute, 13 * time.Minute, 17 * time.Minute, 30 * time.Minute} {
		check(now) // 10, 13, 17 minutes in, then none
	}
	// A job submitted later ages after the ones asked about: the answer
	// kept (none) must give way to it.
	late := add(4, 25*time.Minute)
	check(31 * time.Minute)
	check(34 * time.Minute)
	check(35 * time.Minute)
	// One that leaves: its instant is no longer an answer.
	fifth := add(5, 30*time.Minute)
	check(36 * time.Minute) // 40 minutes in (job 5)
	q.remove(fifth)
	check(36 * time.Minute) // none
	q.remove(late)
	add(6, 28*time.Minute)
	check(37 * time.Minute) // 38 minutes in (job 6)
}
