package offload

import (
	"context"
	"sync/atomic"
)

// Step names what an actor was woken for: the actor says what each means.
type Step uint8

// Actor is what a helper steps.
type Actor interface {
	// Step does s; stop says the actor's loop must end with err.
	Step(ctx context.Context, s Step) (stop bool, err error)
}

type helper struct {
	wake chan struct{}
	done chan struct{}
	// The step to do, and what came of it.
	actor    Actor
	ctx      context.Context
	step     Step
	stop     bool
	err      error
	panicked bool
	panicV   any
}

var (
	// idle are the helpers waiting for a step.
	idle = make(chan *helper, maxHelpers)
	// helpers has a token for each helper there is.
	helpers = make(chan struct{}, maxHelpers)
	// running counts the actors between Started and Finished: when none
	// is left, the helpers end (a process, or a test, whose actors have
	// stopped keeps no goroutine of theirs).
	running atomic.Int64
)

// maxHelpers bounds the helpers: more than steps ever run at once on a
// few cores (a step never waits for another actor's), and few enough
// that a burst — 4,096 GPUs starting at once — does not leave thousands
// of dead goroutines' records behind (the runtime keeps them for reuse,
// about 450 bytes each). A step that finds every helper busy waits for
// one.
const maxHelpers = 64

// Do does step s of a on a helper and waits for it. A panic in the step
// is raised again here, on the caller's goroutine, as if the step had run
// there (a GPU actor's Run takes it as a crash).
//
// Inline does the step on the caller's goroutine instead. Actors on a
// virtual clock do: there the hand-over costs a tenth of a seeded day's
// CPU (two goroutine switches per step), and it moves when the actors'
// goroutines park against the clock's firing, which decides the outcome
// of the seeds where the scheduler's loop finds two timers due at once
// (docs/notes/2026-12-07-idle-stacks.md).
func Do(ctx context.Context, a Actor, s Step, inline bool) (stop bool, err error) {
	if inline {
		return a.Step(ctx, s)
	}
	// Only selects with a default and plain channel operations here: a
	// select that blocks parks in selectgo, whose frame would not fit the
	// caller's 2 KiB.
	var h *helper
	select {
	case h = <-idle:
	default:
		select {
		case helpers <- struct{}{}:
			h = &helper{wake: make(chan struct{}), done: make(chan struct{})}
			go h.run()
		default:
			h = <-idle // every helper is busy: wait for one
		}
	}
	h.actor, h.ctx, h.step = a, ctx, s
	h.wake <- struct{}{}
	<-h.done
	stop, err, panicked, v := h.stop, h.err, h.panicked, h.panicV
	h.actor, h.ctx, h.err, h.panicked, h.panicV = nil, nil, nil, false, nil
	idle <- h // never full: it has room for every helper
	if panicked {
		panic(v)
	}
	return stop, err
}

// Started counts an actor in: the helpers stay while one runs.
func Started() { running.Add(1) }

// Finished counts an actor out; when it was the last, the helpers end
// (none is busy then: only a running actor has steps).
func Finished() {
	if running.Add(-1) > 0 {
		return
	}
	for {
		select {
		case h := <-idle:
			close(h.wake)
			<-helpers
		default:
			return
		}
	}
}

func (h *helper) run() {
	for range h.wake {
		h.do()
		h.done <- struct{}{}
	}
}

func (h *helper) do() {
	defer func() {
		if r := recover(); r != nil {
			h.panicked, h.panicV = true, r
		}
	}()
	h.stop, h.err = h.actor.Step(h.ctx, h.step)
}
