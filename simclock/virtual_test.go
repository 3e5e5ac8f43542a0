package simclock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestVirtualClockWaitsForHeldWork: a timer's receiver hands work to a
// second goroutine through a held mailbox; time must not move until that
// work is done, however slow it is, and timers then fire in due order.
func TestVirtualClockWaitsForHeldWork(t *testing.T) {
	v := NewVirtual(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mailbox := make(chan time.Duration, 16)
	defer close(mailbox) // the worker's end
	var mu sync.Mutex
	var log []string
	record := func(s string, at time.Time) {
		mu.Lock()
		log = append(log, s+"@"+at.Sub(epoch).String())
		mu.Unlock()
	}
	// The worker records the virtual time at which it finishes each job;
	// it is slow in wall time, and must still finish at the instant it started.
	go func() {
		for d := range mailbox {
			time.Sleep(d) // wall-time work, not synchronisation: the clock must wait for it
			record("work", v.Now())
			v.Release()
		}
	}()
	for _, d := range []time.Duration{3 * time.Hour, time.Hour, 2 * time.Hour} {
		timer := v.NewTimer(d)
		go func() {
			at := <-timer.C()
			record("timer", at)
			v.Hold()
			mailbox <- 30 * time.Millisecond
			v.Release()
		}()
	}
	v.StopAt(epoch.Add(10 * time.Hour))
	go v.Run(ctx)
	v.Start()
	select {
	case <-v.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the virtual clock did not reach its limit")
	}
	want := []string{"timer@1h0m0s", "work@1h0m0s", "timer@2h0m0s", "work@2h0m0s", "timer@3h0m0s", "work@3h0m0s"}
	if !slices.Equal(log, want) {
		t.Fatalf("got %v, want %v", log, want)
	}
	if got := v.Now(); !got.Equal(epoch.Add(10 * time.Hour)) {
		t.Fatalf("stopped at %s, want the 10h limit", got.Sub(epoch))
	}
}

// TestVirtualPhasesOrderAnInstant: timers due at one instant fire by
// phase, whatever order they were armed in.
func TestVirtualPhasesOrderAnInstant(t *testing.T) {
	v := NewVirtual(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var order []Phase
	for _, p := range []Phase{PhaseObserve, PhaseDecide, PhaseEvent, PhaseObserve, PhaseEvent} {
		timer := NewPhasedTimer(v, time.Minute, p)
		go func() {
			<-timer.C()
			mu.Lock()
			order = append(order, p)
			mu.Unlock()
			v.Release()
		}()
	}
	v.StopAt(epoch.Add(time.Hour))
	go v.Run(ctx)
	v.Start()
	<-v.Done()
	want := []Phase{PhaseEvent, PhaseEvent, PhaseDecide, PhaseObserve, PhaseObserve}
	if !slices.Equal(order, want) {
		t.Fatalf("phases fired %v, want %v", order, want)
	}
}

// TestVirtualStopDrainsAFiredTimer: an owner that re-arms instead of
// receiving a fired timer must not leave the clock held forever.
func TestVirtualStopDrainsAFiredTimer(t *testing.T) {
	v := NewVirtual(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := v.NewTimer(time.Minute)
	fired := make(chan struct{})
	v.StopWhen(func() bool {
		select {
		case <-fired:
			return true
		default:
			return false
		}
	})
	go v.Run(ctx)
	v.Start()
	// Wait (with a deadline) until the first timer's value is waiting in
	// its channel, then stop it instead of receiving it.
	deadline := time.Now().Add(10 * time.Second)
	for len(first.(*virtualTimer).c) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first timer never fired")
		}
		time.Sleep(time.Millisecond)
	}
	if first.Stop() {
		t.Fatal("Stop on a fired timer reported it pending")
	}
	second := v.NewTimer(time.Minute)
	select {
	case at := <-second.C():
		if at.Sub(epoch) != 2*time.Minute {
			t.Fatalf("second timer fired at %s, want 2m", at.Sub(epoch))
		}
		close(fired)
		v.Release()
	case <-time.After(10 * time.Second):
		t.Fatal("the clock stayed held by the stopped timer")
	}
	<-v.Done()
}

// TestVirtualStopWhenEndsAtASettledInstant: the end condition is asked
// only when nothing is held.
func TestVirtualStopWhenEndsAtASettledInstant(t *testing.T) {
	v := NewVirtual(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var count int
	var mu sync.Mutex
	var tick func()
	tick = func() {
		timer := v.NewTimer(time.Hour)
		go func() {
			select {
			case <-timer.C():
			case <-ctx.Done(): // the test is over: the sixth tick never fires
				return
			}
			mu.Lock()
			count++
			mu.Unlock()
			tick() // re-arm before releasing, as actors do
			v.Release()
		}()
	}
	tick()
	v.StopWhen(func() bool {
		mu.Lock()
		defer mu.Unlock()
		return count == 5
	})
	go v.Run(ctx)
	v.Start()
	<-v.Done()
	if got := v.Now().Sub(epoch); got != 5*time.Hour || count != 5 {
		t.Fatalf("stopped at %s after %d ticks, want 5h and 5", got, count)
	}
}

// TestVirtualCountsTimersArmedWithNothingHeld: a timer armed before the
// clock starts, or while work holds it, is armed at a known instant; one
// armed on the running clock with nothing held is counted loose.
func TestVirtualCountsTimersArmedWithNothingHeld(t *testing.T) {
	v := NewVirtual(epoch)
	v.NewTimer(time.Hour) // before Start: the run's set-up
	v.Start()             // not Run: the clock stays where it is
	v.Hold()
	v.NewTimer(time.Hour) // armed by held work
	v.Release()
	if n := v.LooseArms(); n != 0 {
		t.Fatalf("%d loose arms before any, want 0", n)
	}
	v.NewTimer(time.Hour) // nothing holds the clock
	if n := v.LooseArms(); n != 1 {
		t.Fatalf("%d loose arms, want 1", n)
	}
}

// TestRearmMovesAPendingTimerInPlace: Rearm moves a pending virtual
// timer (the same timer, no new one) and it fires at its new time, after
// a timer now due before it; a timer that fired already is replaced.
func TestRearmMovesAPendingTimerInPlace(t *testing.T) {
	v := NewVirtual(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lease := v.NewTimer(time.Hour)
	other := v.NewTimer(2 * time.Hour)
	if moved := Rearm(v, lease, 3*time.Hour, PhaseEvent); moved != lease {
		t.Fatal("a pending timer was replaced rather than moved")
	}
	go v.Run(ctx)
	v.Start()
	at := <-other.C()
	if want := epoch.Add(2 * time.Hour); !at.Equal(want) {
		t.Fatalf("the other timer fired at %s, want %s", at, want)
	}
	v.Release()
	at = <-lease.C()
	if want := epoch.Add(3 * time.Hour); !at.Equal(want) {
		t.Fatalf("the moved timer fired at %s, want %s", at, want)
	}
	// Fired and received: Rearm arms a new one, an hour on. Held while it
	// does, as an actor re-arming in answer to the firing is.
	again := Rearm(v, lease, time.Hour, PhaseEvent)
	if again == lease {
		t.Fatal("a fired timer was moved rather than replaced")
	}
	v.Release()
	if at := <-again.C(); !at.Equal(epoch.Add(4 * time.Hour)) {
		t.Fatalf("the new timer fired at %s, want %s", at, epoch.Add(4*time.Hour))
	}
	v.Release()
	if n := v.LooseArms(); n != 0 {
		t.Fatalf("%d loose arms", n)
	}
	v.Stop()
	<-v.Done()
}

// TestASettleFlushesOnlyWhatPublished: a settle flushes first only the
// connections that published since their last flush, then every one; a
// settle after which nothing was published flushes nothing (every message
// was routed and delivered by the rounds before).
func TestASettleFlushesOnlyWhatPublished(t *testing.T) {
	v := NewVirtual(epoch)
	var sentA, sentB atomic.Uint64
	var flushedA, flushedB atomic.Int64
	v.WatchSent(func() error { flushedA.Add(1); return nil }, sentA.Load)
	v.WatchSent(func() error { flushedB.Add(1); return nil }, sentB.Load)
	first, second, third := v.NewTimer(time.Hour), v.NewTimer(2*time.Hour), v.NewTimer(3*time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go v.Run(ctx)
	v.Start()
	flushes := func() [2]int64 { return [2]int64{flushedA.Load(), flushedB.Load()} }
	<-first.C()
	if got := flushes(); got != [2]int64{0, 0} {
		t.Fatalf("flushes before the first instant %v, want none: nothing was published", got)
	}
	sentA.Add(1) // the first instant's work publishes on A
	v.Release()
	<-second.C()
	if got := flushes(); got != [2]int64{2, 1} {
		t.Fatalf("flushes after A published %v, want [2 1]: A, then both", got)
	}
	v.Release() // nothing published
	<-third.C()
	if got := flushes(); got != [2]int64{2, 1} {
		t.Fatalf("flushes after a quiet instant %v, want still [2 1]", got)
	}
	v.Release()
}

// failingFlush is a flush that fails its first n calls, and its count of calls.
func failingFlush(n int64) (func() error, *atomic.Int64) {
	var calls atomic.Int64
	return func() error {
		if calls.Add(1) <= n {
			return errors.New("flush timeout")
		}
		return nil
	}, &calls
}

// runToATimer runs v until a timer an hour ahead fires (failing after 30 s
// of wall time); the clock is left held by it (the caller releases).
func runToATimer(t *testing.T, v *Virtual) {
	t.Helper()
	timer := v.NewTimer(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go v.Run(ctx)
	v.Start()
	select {
	case <-timer.C():
	case <-time.After(30 * time.Second):
		t.Fatal("the clock never reached its timer")
	}
}

// TestAFailedFlushKeepsTheInstant: a watched connection whose flush fails
// (times out) has not shown that what it published was delivered, so the
// clock stays at its instant and flushes again until one succeeds —
// moving on could leave a message in flight across instants.
func TestAFailedFlushKeepsTheInstant(t *testing.T) {
	v := NewVirtual(epoch)
	flush, calls := failingFlush(3)
	v.Watch(flush, nil)
	runToATimer(t, v)
	if n := calls.Load(); n < 5 {
		t.Fatalf("the timer fired after %d flushes, 3 of them failed: the clock moved on without a flush that succeeded (want at least 2 after the failures)", n)
	}
	if got := v.FlushErrors(); got != 3 {
		t.Fatalf("FlushErrors %d, want 3", got)
	}
	v.Release()
}

// TestAFailedFlushOfAConnectionThatPublishedIsRetried: the same with a
// connection whose sent count is known — the settle notes its count as
// flushed before the flush fails, and must still flush it again rather
// than take the next round as quiet.
func TestAFailedFlushOfAConnectionThatPublishedIsRetried(t *testing.T) {
	v := NewVirtual(epoch)
	var sent atomic.Uint64
	flush, calls := failingFlush(2)
	v.WatchSent(flush, sent.Load)
	sent.Add(1) // it published: the first round flushes it
	runToATimer(t, v)
	if n := calls.Load(); n <= 2 {
		t.Fatalf("the timer fired after %d flushes, all of them failed: the retry was skipped", n)
	}
	v.Release()
}
