package simtest

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// pipeWorker is a Worker that serves on a goroutine over pipes, as a
// worker process would over its standard input and output.
func pipeWorker(ctx context.Context, o Options) *Worker {
	seedsR, seedsW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := Serve(ctx, seedsR, outW, o)
		outW.CloseWithError(err)
		seedsR.Close()
		served <- err
	}()
	return &Worker{Seeds: seedsW, Outcomes: outR, Wait: func() error { return <-served }}
}

// TestSeedsRunApartComeBackAsTheyRanInProcess: seeds handed to workers
// one at a time (each its own process in `cluster simtest`) give the
// outcomes the same seeds give in-process, in the seeds' order, each once.
func TestSeedsRunApartComeBackAsTheyRanInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := Options{Hours: 2, Workers: 2}
	seeds := []uint64{3, 1, 2}
	want := RunSeeds(ctx, seeds, o, nil)
	calls := 0
	apart := o
	apart.Worker = func(ctx context.Context, o Options) (*Worker, error) { return pipeWorker(ctx, o), nil }
	got := RunSeeds(ctx, seeds, apart, func(Outcome) { calls++ })
	if calls != len(seeds) {
		t.Fatalf("done called %d times for %d seeds", calls, len(seeds))
	}
	for i := range seeds {
		g, w := got[i], want[i]
		if g.Err != nil || w.Err != nil {
			t.Fatalf("seed %d: apart %v, in-process %v", seeds[i], g.Err, w.Err)
		}
		g.Wall, w.Wall, g.Summary.Wall, w.Summary.Wall = 0, 0, 0, 0
		if g.Seed != seeds[i] || !reflect.DeepEqual(g, w) {
			t.Errorf("seed %d apart: %s, %d events, %+v\nin-process: %s, %d events, %+v", seeds[i], g.Case, g.Events, g.Summary, w.Case, w.Events, w.Summary)
		}
		if g.Events == 0 {
			t.Errorf("seed %d: no events checked", seeds[i])
		}
	}
}

// TestAWorkerThatEndsFailsItsSeedAndTheOthersRunTheRest: a worker that
// ends without answering fails the seed it held, with the reason; the
// other worker runs every other seed; none is left unrun and unsaid.
func TestAWorkerThatEndsFailsItsSeedAndTheOthersRunTheRest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := Options{Hours: 1, Workers: 2}
	started := 0
	o.Worker = func(ctx context.Context, o Options) (*Worker, error) {
		started++
		if started == 1 {
			r, w := io.Pipe()
			w.Close() // it ends at once
			return &Worker{Seeds: nopCloser{io.Discard}, Outcomes: r, Wait: func() error { return errors.New("exit status 2") }}, nil
		}
		return pipeWorker(ctx, o), nil
	}
	seeds := []uint64{1, 2, 3, 4}
	got := RunSeeds(ctx, seeds, o, nil)
	failed := 0
	for i, oc := range got {
		switch {
		case oc.Err != nil:
			failed++
			if !strings.Contains(oc.Err.Error(), "ended without answering: exit status 2") || oc.Seed != seeds[i] {
				t.Errorf("seed %d's outcome: %v, want it failed by the worker that ended, with how it ended", seeds[i], oc.Err)
			}
		case oc.Events == 0:
			t.Errorf("seed %d: neither run nor failed: %+v", seeds[i], oc)
		}
	}
	if failed != 1 {
		t.Fatalf("%d seeds failed, want the one the ended worker held", failed)
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
