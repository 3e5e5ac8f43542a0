package simtest

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpusched/gpusched/sim"
)

// seedResult is an Outcome as a worker sends it back: without its Case,
// which the other end deals again from the seed (a case carries its
// whole day of arrivals), and with its error as text. It travels as gob,
// which carries every float a summary may hold (JSON has no NaN).
type seedResult struct {
	Seed              uint64
	Problems, History []string
	Summary           sim.Summary
	Events            int
	SchedulerKills    int
	Wall              time.Duration
	Err               string
}

// Serve is a worker of RunSeeds run apart (Options.Worker): it reads
// seeds from seeds, one decimal number a line, runs each case under o
// (its Workers and Worker aside) when it is read, and writes its outcome
// to outcomes (a gob stream) before it reads the next, until seeds ends.
// A line that is not a seed is an error (nothing more runs).
func Serve(ctx context.Context, seeds io.Reader, outcomes io.Writer, o Options) error {
	in := bufio.NewScanner(seeds)
	out := bufio.NewWriter(outcomes)
	enc := gob.NewEncoder(out)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		seed, err := strconv.ParseUint(line, 10, 64)
		if err != nil {
			return fmt.Errorf("simtest worker: %q is not a seed (a whole number)", line)
		}
		oc := Run(ctx, o.caseOf(seed))
		r := seedResult{Seed: seed, Problems: oc.Problems, History: oc.History, Summary: oc.Summary, Events: oc.Events,
			SchedulerKills: oc.SchedulerKills, Wall: oc.Wall}
		if oc.Err != nil {
			r.Err = oc.Err.Error()
		}
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("simtest worker: seed %d's outcome: %w", seed, err)
		}
		if err := out.Flush(); err != nil {
			return fmt.Errorf("simtest worker: writing seed %d's outcome: %w", seed, err)
		}
	}
	return in.Err()
}

// Worker is one worker RunSeeds hands seeds to (Options.Worker), one at
// a time: where it reads them (Serve's seeds), where it answers (Serve's
// outcomes), and Wait, which waits for it to end once Seeds is closed.
type Worker struct {
	Seeds    io.WriteCloser
	Outcomes io.Reader
	Wait     func() error
}

// runApart is RunSeeds with each of o.Workers a Worker of o.Worker's —
// for `cluster simtest`, a process of its own on one processor, which
// spends less CPU on the same seeds than goroutines sharing a process
// (docs/PERFORMANCE.md). Each worker is handed the next seed when it
// answers the last, so a long seed holds up only its own worker. A worker
// that fails or ends early fails the seed it held, saying how it ended;
// the others run the rest, and a seed no worker was left to run fails
// with that said.
func runApart(ctx context.Context, seeds []uint64, o Options, done func(Outcome)) []Outcome {
	outcomes := make([]Outcome, len(seeds))
	ran := make([]bool, len(seeds))
	next := make(chan int, len(seeds))
	for i := range seeds {
		next <- i
	}
	close(next)
	var mu sync.Mutex
	finish := func(i int, oc Outcome) {
		mu.Lock()
		defer mu.Unlock()
		outcomes[i], ran[i] = oc, true
		if done != nil {
			done(oc)
		}
	}
	var lastErr error // the last worker failure, for the seeds none ran
	remember := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		lastErr = err
	}
	var wg sync.WaitGroup
	for range o.Workers {
		w, err := o.Worker(ctx, o)
		if err != nil {
			remember(err)
			continue
		}
		wg.Go(func() {
			answers := gob.NewDecoder(w.Outcomes)
			failed := func(i int, err error) {
				if ctx.Err() != nil {
					return // interrupted: the seed was not run to its end, as RunSeeds leaves one
				}
				finish(i, Outcome{Case: o.caseOf(seeds[i]), Err: fmt.Errorf("simtest worker: %w", err)})
				remember(err)
			}
			// The worker's end: its seeds closed, then waited for (once).
			end := sync.OnceValue(func() error {
				w.Seeds.Close()
				return w.Wait()
			})
			defer func() {
				if err := end(); err != nil && ctx.Err() == nil {
					remember(err)
				}
			}()
			for i := range next {
				if ctx.Err() != nil {
					return
				}
				if _, err := fmt.Fprintf(w.Seeds, "%d\n", seeds[i]); err != nil {
					failed(i, err)
					return
				}
				var r seedResult
				if err := answers.Decode(&r); err != nil {
					if errors.Is(err, io.EOF) {
						err = errors.New("the worker ended without answering")
						if why := end(); why != nil {
							err = fmt.Errorf("the worker ended without answering: %w", why)
						}
					}
					failed(i, err)
					return
				}
				if r.Seed != seeds[i] {
					failed(i, fmt.Errorf("the worker answered for seed %d, asked seed %d", r.Seed, seeds[i]))
					return
				}
				oc := Outcome{Case: o.caseOf(r.Seed), Problems: r.Problems, History: r.History, Summary: r.Summary, Events: r.Events,
					SchedulerKills: r.SchedulerKills, Wall: r.Wall}
				if r.Err != "" {
					oc.Err = errors.New(r.Err)
				}
				finish(i, oc)
			}
		})
	}
	wg.Wait()
	if ctx.Err() == nil {
		for i := range seeds {
			if !ran[i] {
				why := "every worker failed"
				if lastErr != nil {
					why += " (the last: " + lastErr.Error() + ")"
				}
				finish(i, Outcome{Case: o.caseOf(seeds[i]), Err: errors.New("not run: " + why)})
			}
		}
	}
	return outcomes
}
