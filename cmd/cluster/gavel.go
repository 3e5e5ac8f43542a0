package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpusched/gpusched/gavel"
	"github.com/gpusched/gpusched/sim"
)

// gavelRun is one run of `cluster replay --gavel`: its configuration and,
// once done, its result and the reference's.
type gavelRun struct {
	cfg gavel.Config
	// placement, when set, runs the trace live under this placement
	// policy of the scheduler's own (compare --placements) instead of
	// cfg.Policy's rounds.
	placement string
	res       *gavel.Result
	took      time.Duration
	err       error
	ref       *gavel.Reference
	refName   string
}

// gavelCommand is `cluster replay --gavel DIR`: the Gavel paper's
// simulator runs — generated jobs on V100, P100 and K80 GPUs in 360-second
// rounds — under FIFO, Isolated, AlloX, Gandiva or an LP policy, each job's JCT beside
// the reference simulator's.
func gavelCommand(args []string) error {
	fs := flag.NewFlagSet("cluster replay --gavel", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: cluster replay --gavel DIR --policy P (--static N | --lam S --window A-B) --cluster V:P:K --seed S [--multi-gpu] [--offline] [--out OUTDIR] [--compare]
       cluster replay --gavel DIR --reference [--offline] [--out OUTDIR]

Runs the Gavel paper's (OSDI'20) simulator as DIR/MODEL.md specifies it:
jobs of 26 measured types drawn from --seed (CPython's generators), their
speed on each GPU type from DIR/data/simulation_throughputs.json, 360-second
rounds in which the policy's allocation becomes each round's assignment.
--static N puts N jobs at time 0; --lam S draws Poisson arrivals S seconds
apart on average and measures jobs A..B-1 (--window A-B). --cluster counts
V100, P100 and K80 GPUs. --policy and --seed take lists (fifo,allox; 0-2):
one run each. --reference runs every run of DIR/runs/INDEX.csv instead.

--out writes each run as it finishes: NAME.csv in the columns of DIR/runs
(job_id,submit_s,jct_s,job_type,scale_factor,total_steps,duration_s,in_window)
and NAME.json, NAME as the reference names its runs
(static_fifo_c8-8-8_n60_seed0). --compare sets each run beside the
reference run of the same configuration in DIR/runs: how many JCTs are
equal (within 1e-6 s), the largest difference, both averages and both
utilisations. Ctrl-C stops; the runs that finished are kept and tabled.

Without --offline each run is live, on a virtual clock: an embedded NATS
server, a node per GPU type with its GPU actors running jobs at the
table's rates (alone or packed), the scheduler stepping Gavel's rounds and
enacting each round's tasks on named GPUs, every job submitted over the
bus at its arrival. Its JCTs are the offline run's, bit for bit (the
scheduler's job events carry them). --offline runs the pure model (package
gavel), faster.

  cluster replay --gavel ../shared/traces/gavel --policy fifo --static 60 --cluster 8:8:8 --seed 0 --compare
  cluster replay --gavel ../shared/traces/gavel --policy fifo --static 60 --cluster 8:8:8 --seed 0 --offline --compare
  cluster replay --gavel ../shared/traces/gavel --policy allox --lam 4500 --window 4000-5000 --cluster 36:36:36 --seed 42 --offline --compare
  cluster replay --gavel ../shared/traces/gavel --reference --offline --out gavel-runs/

flags:
`)
		fs.PrintDefaults()
	}
	dir := fs.String("gavel", filepath.Join(tracesDir(), "..", "gavel"), "the Gavel data folder (data/, runs/, MODEL.md)")
	policies := fs.String("policy", "fifo", "policy or comma-separated policies: "+strings.Join(gavel.PolicyNames(), ", "))
	static := fs.Int("static", 0, "a static trace: this many jobs, all arriving at time 0")
	lam := fs.Float64("lam", 0, "mean inter-arrival time in seconds (continuous arrivals; with --window)")
	window := fs.String("window", "", "with --lam: the measured jobs A-B (ids A to B-1); the run ends when they are done")
	clusterText := fs.String("cluster", "8:8:8", "V100:P100:K80 GPU counts, one GPU per server")
	seedsText := fs.String("seed", "0", "seed, range or list (0, 0-2, 0,42): one run per seed")
	multiGPU := fs.Bool("multi-gpu", false, "draw multi-GPU jobs (scale factors 2, 4, 8), as the reference's -m")
	offline := fs.Bool("offline", false, "run on the pure model, without actors or bus (the same JCTs, faster)")
	out := fs.String("out", "", "folder for NAME.csv and NAME.json of each run, written as it finishes")
	compare := fs.Bool("compare", false, "set each run beside the reference run of the same configuration in DIR/runs")
	reference := fs.Bool("reference", false, "run every run of DIR/runs/INDEX.csv, each compared (instead of --policy, --static, --lam …)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags go before nothing else: cluster replay --gavel DIR --policy fifo …)", fs.Arg(0))
	}
	data, err := gavel.Load(*dir)
	if err != nil {
		return fmt.Errorf("--gavel: %w (the Gavel artifact's data: github.com/stanford-futuredata/gavel, scheduler/; here in ../shared/traces/gavel)", err)
	}
	var runs []*gavelRun
	if *reference {
		names, err := gavel.ReferenceNames(*dir)
		if err != nil {
			return fmt.Errorf("--reference: %w", err)
		}
		for _, name := range names {
			cfg, err := gavel.ParseRunName(name)
			if err != nil {
				return fmt.Errorf("--reference: %s: %w", name, err)
			}
			runs = append(runs, &gavelRun{cfg: cfg, refName: name})
		}
		*compare = true
	} else {
		base, err := gavelTrace(*clusterText, *static, *lam, *window, *multiGPU)
		if err != nil {
			return err
		}
		seeds, err := parseSeeds(*seedsText)
		if err != nil || len(seeds) == 0 || seeds[0] < 0 {
			return fmt.Errorf("--seed: %q is not a seed, a range or a list (0, 0-2, 0,42)", *seedsText)
		}
		var names []string
		for _, p := range strings.Split(*policies, ",") {
			p = strings.TrimSpace(p)
			if _, err := gavel.NewPolicy(p, 0); err != nil {
				return fmt.Errorf("--policy: %w", err)
			}
			names = append(names, p)
		}
		if runs, err = gavelRuns([]gavel.Config{base}, names, seeds); err != nil {
			return err
		}
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	ctx, stop := interruptContext()
	defer stop()
	var mu sync.Mutex
	done := 0
	workers := min(runtime.GOMAXPROCS(0), len(runs))
	if len(runs) > 1 {
		fmt.Fprintf(os.Stderr, "gavel: %d runs, %d at a time\n", len(runs), workers)
	}
	inParallel(len(runs), workers, func(i int) {
		r := runs[i]
		if ctx.Err() != nil {
			return
		}
		start := time.Now()
		if *offline {
			r.res, r.err = gavel.Run(ctx, data, r.cfg)
		} else {
			var live *sim.GavelRun
			if live, r.err = sim.RunGavel(ctx, data, r.cfg, nil, nil); r.err == nil {
				r.res = live.Result
				fmt.Fprintf(os.Stderr, "gavel: %s live: %s simulated in %s\n", gavel.RunName(r.cfg), live.Run.Length.Round(time.Second), live.Run.Wall.Round(time.Millisecond))
			}
		}
		r.took = time.Since(start)
		if r.err != nil {
			return
		}
		if *compare {
			if r.refName == "" {
				r.refName, _ = gavel.FindReference(*dir, r.cfg)
			}
			if r.refName != "" {
				r.ref, r.err = gavel.ReadReference(*dir, r.refName)
			}
		}
		if *out != "" && r.err == nil {
			r.err = writeGavelRun(*out, r)
		}
		mu.Lock()
		done++
		if len(runs) > 1 {
			fmt.Fprintf(os.Stderr, "gavel: %s done in %s (%d of %d)\n", gavel.RunName(r.cfg), r.took.Round(time.Millisecond), done, len(runs))
		}
		mu.Unlock()
	})
	var finished []*gavelRun
	for _, r := range runs {
		if r.err != nil && !errors.Is(r.err, context.Canceled) {
			return fmt.Errorf("%s: %w", gavel.RunName(r.cfg), r.err)
		}
		if r.res != nil && r.err == nil {
			finished = append(finished, r)
		}
	}
	printGavelTable(finished)
	if *out != "" && len(finished) > 0 {
		fmt.Fprintf(os.Stderr, "wrote %s: NAME.csv and NAME.json for %d runs\n", *out, len(finished))
	}
	if ctx.Err() != nil {
		kept := "kept above"
		if *out != "" {
			kept += " and in " + *out
		}
		return fmt.Errorf("interrupted: %d of %d runs finished (%s)", len(finished), len(runs), kept)
	}
	return nil
}

// gavelTrace is the trace the flags --cluster, --static, --lam, --window
// and --multi-gpu describe, with no policy or seed yet.
func gavelTrace(clusterText string, static int, lam float64, window string, multiGPU bool) (gavel.Config, error) {
	base := gavel.Config{MultiGPU: multiGPU}
	var err error
	if base.Counts, err = gavel.ParseCluster(clusterText); err != nil {
		return base, fmt.Errorf("--cluster: %w", err)
	}
	switch {
	case static > 0 && (lam != 0 || window != ""):
		return base, errors.New("--static N and --lam S --window A-B are two kinds of trace: give one")
	case static > 0:
		base.WindowEnd = static
	case static < 0:
		return base, fmt.Errorf("--static: %d is not a number of jobs", static)
	case lam > 0:
		a, b, ok := strings.Cut(window, "-")
		lo, errA := strconv.Atoi(a)
		hi, errB := strconv.Atoi(b)
		if !ok || errA != nil || errB != nil || lo < 0 || hi <= lo {
			return base, fmt.Errorf("--window: %q is not A-B, the ids of the measured jobs (e.g. 50-150)", window)
		}
		base.Lam, base.WindowStart, base.WindowEnd = lam, lo, hi
	case lam < 0:
		return base, fmt.Errorf("--lam: %v is not a mean inter-arrival time in seconds", lam)
	default:
		return base, errors.New("say which trace: --static N (N jobs at time 0) or --lam S --window A-B (arrivals S seconds apart on average)")
	}
	return base, nil
}

// gavelRuns are the runs of each trace under each policy and seed, in
// that order, each configuration checked (gavel.Config.Validate).
func gavelRuns(traces []gavel.Config, policies []string, seeds []int64) ([]*gavelRun, error) {
	var runs []*gavelRun
	for _, base := range traces {
		for _, p := range policies {
			for _, seed := range seeds {
				cfg := base
				cfg.Policy, cfg.Seed = p, uint64(seed)
				if err := cfg.Validate(); err != nil {
					return nil, fmt.Errorf("--%w", err)
				}
				runs = append(runs, &gavelRun{cfg: cfg})
			}
		}
	}
	return runs, nil
}

// column is the name of the comparison column r belongs to: its Gavel
// policy, or the placement policy it ran under.
func (r *gavelRun) column() string { return cmp.Or(r.placement, r.cfg.Policy) }

// name names r in progress lines: the reference's run name, with the
// placement policy it ran under.
func (r *gavelRun) name() string {
	if r.placement != "" {
		return strings.Replace(gavel.RunName(r.cfg), "_"+r.cfg.Policy+"_", "_"+r.placement+"_", 1)
	}
	return gavel.RunName(r.cfg)
}

// writeGavelRun writes a finished run's CSV and summary into dir.
func writeGavelRun(dir string, r *gavelRun) error {
	name := gavel.RunName(r.cfg)
	if r.refName != "" {
		name = r.refName
	}
	if err := writeFile(filepath.Join(dir, name+".csv"), func(f *os.File) error { return gavel.WriteCSV(f, r.res) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, name+".json"), func(f *os.File) error { return gavel.WriteSummary(f, r.res, r.took.Seconds()) })
}

// printGavelTable prints one line per finished run: its figures and, with
// a reference, the reference's beside them and how many JCTs are equal.
func printGavelTable(runs []*gavelRun) {
	if len(runs) == 0 {
		return
	}
	// The run column as wide as the longest name (an LP policy's run
	// name is longer than the reference's).
	width := len("run")
	for _, r := range runs {
		width = max(width, len(gavel.RunName(r.cfg)), len(r.refName))
	}
	fmt.Printf("%-*s %6s %16s %12s %9s %11s", width, "run", "jobs", "avg JCT (s)", "utilisation", "wall", "makespan (s)")
	compared := false
	for _, r := range runs {
		compared = compared || r.ref != nil
	}
	if compared {
		fmt.Printf("  %-11s %12s %16s %12s %9s", "equal JCTs", "max |ΔJCT|", "reference avg", "ref. util.", "ref. wall")
	}
	fmt.Println()
	totalEqual, totalJobs, refRuns := 0, 0, 0
	for _, r := range runs {
		name := gavel.RunName(r.cfg)
		if r.refName != "" {
			name = r.refName
		}
		fmt.Printf("%-*s %6d %16.6f %12.9f %9s %11.1f", width, name, len(r.res.Jobs), r.res.AverageJCT, r.res.Utilization, r.took.Round(time.Millisecond), r.res.Makespan)
		if r.ref != nil {
			c := gavel.Compare(r.res, r.ref)
			totalEqual += c.Equal
			totalJobs += len(r.ref.Jobs)
			refRuns++
			fmt.Printf("  %-11s %12.2e %16.6f %12.9f %8.1fs", fmt.Sprintf("%d/%d", c.Equal, len(r.ref.Jobs)), c.MaxDiff, r.ref.AverageJCT, r.ref.Utilization, r.ref.Wall)
			if c.FirstDiffer >= 0 {
				fmt.Printf("  first differing job: %d", c.FirstDiffer)
			}
		} else if compared {
			fmt.Printf("  %-11s", "no reference run")
		}
		fmt.Println()
	}
	if refRuns > 0 {
		fmt.Printf("\n%d of %d jobs' JCTs equal the reference's (|Δ| ≤ %g s) over %d runs\n", totalEqual, totalJobs, gavel.JCTTolerance, refRuns)
	}
}
