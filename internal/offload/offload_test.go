package offload_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/gpusched/gpusched/internal/offload"
)

// The helpers end once the last actor has finished: goleak fails the
// package if any is left.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// counter is an actor whose steps add to n; step 2 panics, step 3 stops.
type counter struct{ n int }

var errStop = errors.New("stop")

func (c *counter) Step(_ context.Context, s offload.Step) (bool, error) {
	switch s {
	case 2:
		panic("step 2")
	case 3:
		return true, errStop
	}
	c.n += int(s)
	return false, nil
}

// TestStepsRunInOrderAndPanicsComeHome: each actor's steps, done on
// helpers, see what its earlier steps did (the race detector checks the
// hand-over), a step's result comes back, and a panic is raised on the
// caller's goroutine.
func TestStepsRunInOrderAndPanicsComeHome(t *testing.T) {
	const actors, steps = 100, 200
	var wg sync.WaitGroup
	for range actors {
		wg.Go(func() {
			offload.Started()
			defer offload.Finished()
			c := &counter{}
			for range steps {
				if stop, err := offload.Do(context.Background(), c, 1, false); stop || err != nil {
					t.Errorf("step 1: stop %v, err %v", stop, err)
				}
			}
			if c.n != steps {
				t.Errorf("n = %d after %d steps of 1", c.n, steps)
			}
			if stop, err := offload.Do(context.Background(), c, 3, false); !stop || err != errStop {
				t.Errorf("step 3: stop %v, err %v; want true, errStop", stop, err)
			}
			defer func() {
				if r := recover(); r != "step 2" {
					t.Errorf("recovered %v; want the step's panic", r)
				}
			}()
			offload.Do(context.Background(), c, 2, false)
			t.Error("a panicking step returned")
		})
	}
	wg.Wait()
}
