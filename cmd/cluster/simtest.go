package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/simtest"
)

// simtestCommand is `cluster simtest`: many seeds, each a drawn cluster,
// workload, policy and fault schedule on the virtual clock, every event
// checked in-process; a failing seed prints the command that replays it.
func simtestCommand(args []string) error {
	fs := newFlags("cluster simtest")
	seedsFlag := fs.String("seeds", "1-20", "seeds to run: 7, 1-1000 or 3,9")
	hours := fs.Float64("hours", 24, "simulated hours of arrivals per seed (then a drain until every job ends)")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "seeds at once")
	verbose := fs.Bool("verbose", false, "print each seed's case and outcome")
	quiet := fs.Bool("quiet", false, "no progress bar")
	sample := fs.Duration("sample", simtest.DefaultSample, "simulated period of the samples whose totals must never go back")
	pol := fs.String("policy", "", "run every seed under this placement policy instead of the one it was dealt: "+strings.Join(policy.Names[policy.Policy](), ", "))
	queue := fs.String("queue", "", "run every seed under this queue order instead of the one it was dealt: "+strings.Join(policy.Names[policy.QueueSort](), ", "))
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof reads it; runs the workers in-process)")
	inProcess := fs.Bool("in-process", false, "run the workers as goroutines of this process, not as processes of one processor each")
	serve := fs.Bool("serve", false, "be one worker of another simtest: run the seeds read from standard input, one a line, writing each outcome to standard output (gob)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *serve {
		return serveSeeds(simtest.Options{Hours: *hours, Sample: *sample, Policy: *pol, Queue: *queue})
	}
	seeds, err := parseSeeds(*seedsFlag)
	if err != nil {
		return err
	}
	defer cluster.TuneGC(max(1, *workers) * simtest.MaxGPUs)() // the clusters that run at once
	if *hours <= 0 {
		return errors.New("--hours must be positive, e.g. 24")
	}
	if *sample <= 0 {
		return errors.New("--sample must be a positive duration, e.g. 10m")
	}
	if *workers < 1 {
		return errors.New("--workers must be at least 1")
	}
	if *pol != "" {
		if _, err := policy.Lookup[policy.Policy](*pol); err != nil {
			return fmt.Errorf("--policy: %w", err)
		}
	}
	if *queue != "" {
		if _, err := policy.Lookup[policy.QueueSort](*queue); err != nil {
			return fmt.Errorf("--queue: %w", err)
		}
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var bar *progressbar.ProgressBar
	if !*quiet && !*verbose {
		bar = progressbar.NewOptions(len(seeds), progressbar.OptionSetDescription("seeds"), progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionShowCount(), progressbar.OptionSetElapsedTime(true))
	}
	start := time.Now()
	drawn := make([]uint64, len(seeds))
	for i, seed := range seeds {
		drawn[i] = uint64(seed)
	}
	opts := simtest.Options{Hours: *hours, Sample: *sample, Workers: *workers, Policy: *pol, Queue: *queue}
	where := "in this process"
	if *workers > 1 && !*inProcess && *cpuProfile == "" {
		where, opts.Worker = "each a process", startWorker
	}
	outcomes := simtest.RunSeeds(ctx, drawn, opts, func(o simtest.Outcome) {
		if bar != nil {
			bar.Add(1)
		}
		if *verbose {
			status := "ok"
			if o.Err != nil {
				status = "error: " + o.Err.Error()
			} else if len(o.Problems) > 0 {
				status = fmt.Sprintf("%d problems", len(o.Problems))
			}
			fmt.Printf("%s — %d events, %d/%d completed, %d faults — %s (%s)\n", o.Case, o.Events, o.Summary.Completed,
				o.Summary.Submitted, o.Summary.Faults, status, o.Wall.Round(time.Millisecond))
		}
	})
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(os.Stderr)
	}
	// Interrupted, the seeds that ran to their end are still reported: a
	// seed cut short (its run failed when the interrupt came) or never
	// started is left out, and said so.
	interrupted := ctx.Err() != nil
	ran := 0
	var failed []simtest.Outcome
	var simulated time.Duration
	var evs, jobs, faults int
	for _, o := range outcomes {
		if o.Seed == 0 && o.Events == 0 || interrupted && o.Err != nil {
			continue
		}
		ran++
		simulated += o.Summary.Length
		evs += o.Events
		jobs += o.Summary.Submitted
		faults += o.Summary.Faults
		if o.Err != nil || len(o.Problems) > 0 {
			failed = append(failed, o)
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	if interrupted {
		fmt.Fprintf(tw, "seeds\t%d of %d (%s) run to their end before the interrupt\n", ran, len(seeds), *seedsFlag)
	} else {
		fmt.Fprintf(tw, "seeds\t%d (%s)\n", len(seeds), *seedsFlag)
	}
	fmt.Fprintf(tw, "simulated\t%.1f days (%g h of arrivals each, then the drain)\n", simulated.Hours()/24, *hours)
	fmt.Fprintf(tw, "jobs, events checked\t%d, %d\n", jobs, evs)
	fmt.Fprintf(tw, "faults that took jobs down\t%d\n", faults)
	fmt.Fprintf(tw, "wall\t%s (%d at once, %s)\n", time.Since(start).Round(time.Millisecond), *workers, where)
	fmt.Fprintf(tw, "seeds with violations\t%d\n", len(failed))
	tw.Flush()
	for _, o := range failed {
		fmt.Printf("\n%s\n", o.Case)
		if o.Err != nil {
			fmt.Printf("  run failed: %v\n", o.Err)
		}
		for i, p := range o.Problems {
			if i == 5 {
				fmt.Printf("  … and %d more\n", len(o.Problems)-5)
				break
			}
			fmt.Printf("  %s\n", p)
		}
		if len(o.History) > 0 {
			fmt.Println("  the events that show the first:")
			for _, l := range o.History {
				fmt.Printf("    %s\n", l)
			}
		}
		fmt.Printf("  replay: %s\n", simtest.ReplayCommand(o.Seed, opts))
	}
	switch {
	case len(failed) > 0:
		return fmt.Errorf("%d of %d seeds broke an invariant", len(failed), ran)
	case interrupted:
		return fmt.Errorf("interrupted: %d of %d seeds run", ran, len(seeds))
	}
	return nil
}

// serveSeeds is `cluster simtest --serve`: one worker process of another
// simtest (startWorker), running the seeds it is handed one at a time.
func serveSeeds(o simtest.Options) error {
	defer cluster.TuneGC(simtest.MaxGPUs)() // one cluster at a time
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return simtest.Serve(ctx, os.Stdin, os.Stdout, o)
}

// startWorker starts a worker process for simtest.RunSeeds: this program's
// `simtest --serve` under o, on one processor (GOMAXPROCS=1): processes
// of one processor each spend less CPU on the same seeds than goroutine
// workers sharing a process of several (fewer hand-offs between the
// runtime's processors; measured in docs/PERFORMANCE.md). Its log and
// errors go to this process's standard error; it is interrupted when ctx
// ends.
func startWorker(ctx context.Context, o simtest.Options) (*simtest.Worker, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("a simtest worker process: %w", err)
	}
	args := []string{"simtest", "--serve", "--hours", strconv.FormatFloat(o.Hours, 'g', -1, 64)}
	if o.Sample > 0 {
		args = append(args, "--sample", o.Sample.String())
	}
	if o.Policy != "" {
		args = append(args, "--policy", o.Policy)
	}
	if o.Queue != "" {
		args = append(args, "--queue", o.Queue)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	// Interrupted, a worker ends the seed it runs as this process would
	// (its run fails at once), then is killed if it has not ended in 5 s.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("a simtest worker process: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("a simtest worker process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("a simtest worker process: %w", err)
	}
	return &simtest.Worker{Seeds: in, Outcomes: out, Wait: cmd.Wait}, nil
}

// startCPUProfile writes a CPU profile of the command to path until the
// returned stop is called (nothing when path is empty).
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
