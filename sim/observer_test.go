package sim

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/observer"
)

// TestStalledObserverDoesNotBlockTheCluster runs a seeded workload twice:
// alone, and with a real observer (a Watcher, taking snapshots too) that
// stops reading its events. The stalled observer's pending events are
// bounded, so NATS drops the excess for it alone: the cluster finishes the
// same work with the same outcome, job for job. Once the observer reads
// again it reports the events it missed from the gaps in each source's seq.
func TestStalledObserverDoesNotBlockTheCluster(t *testing.T) {
	cfg := Config{Shape: referenceShape(t), Policy: "binpack", Seed: 11, Rate: 8, Hours: 24,
		Interference: model.DefaultInterference}
	alone, csvAlone := runConfig(t, cfg)

	var (
		mu       sync.Mutex
		watcher  *observer.Watcher
		resumed  = make(chan struct{})
		stop     context.CancelFunc
		finished = make(chan struct{})
		nc       *nats.Conn
	)
	// The observer stops reading until NATS has dropped dropBefore of its
	// events (it holds at most 64), then reads again. The run publishes
	// thousands of events, so the stall ends early in it whatever the
	// machine's speed.
	const dropBefore = 500
	cfg.Attach = func(url string) {
		var err error
		nc, err = nats.Connect(url, nats.Name("stalled-observer"),
			nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})) // the gaps tell
		if err != nil {
			t.Fatal(err)
		}
		w, err := observer.NewWatcher(nc, events.NewSubjects(""), observer.WatchOptions{Interval: 20 * time.Millisecond, Pending: 64,
			OnEvent: func(*events.Decoded, string) {
				select {
				case <-resumed:
					return
				default:
				}
				for {
					mu.Lock()
					w := watcher
					mu.Unlock()
					if w != nil && w.State().Dropped >= dropBefore {
						close(resumed)
						return
					}
					time.Sleep(time.Millisecond) // stalled: not reading
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		watcher = w
		mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		stop = cancel
		go func() { w.Run(ctx); close(finished) }()
	}
	withObserver, csvObserved := runConfig(t, cfg)
	defer func() { stop(); <-finished; nc.Close() }()

	if !bytes.Equal(csvAlone, csvObserved) {
		t.Fatalf("a stalled observer changed the outcome:\n%s", firstDiff(csvAlone, csvObserved))
	}
	if alone.Final != withObserver.Final {
		t.Fatalf("final metrics differ with a stalled observer: %+v vs %+v", alone.Final, withObserver.Final)
	}
	select {
	case <-resumed:
	default:
		t.Fatalf("NATS never dropped %d events for the stalled observer", dropBefore)
	}
	mu.Lock()
	w := watcher
	mu.Unlock()
	st := w.State()
	// Every event NATS dropped was followed by a later one from the busiest
	// source (the scheduler), so nearly all show up as gaps; a gap is
	// found only when its source speaks again, so Missed ≤ Dropped.
	if st.Missed < dropBefore/2 || st.Missed > uint64(st.Dropped) {
		t.Fatalf("the observer read %d events, NATS dropped %d for it, it reports %d missed from seq gaps: want most of the dropped", st.Events, st.Dropped, st.Missed)
	}
	t.Logf("%d jobs; the stalled observer read %d events, NATS dropped %d for it, it reports %d missed from seq gaps", len(withObserver.Jobs), st.Events, st.Dropped, st.Missed)
}
