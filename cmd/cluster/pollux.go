package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/pollux"
	"github.com/gpusched/gpusched/sim"
)

// hasValueFlag reports whether args carry the flag name with a value
// (--name V, --name=V, one dash or two).
func hasValueFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "-"+name || a == "--"+name || strings.HasPrefix(a, "-"+name+"=") || strings.HasPrefix(a, "--"+name+"=") {
			return true
		}
	}
	return false
}

// polluxLoads are the relative loads a Pollux data folder may hold.
var polluxLoads = []string{"0.5", "1.0", "1.5", "2.0"}

// polluxCommand is `cluster replay --pollux DIR`: the Pollux paper's
// workloads under its Tiresias, Optimus and Pollux policies, each job's
// JCT beside the published one.
func polluxCommand(args []string) error {
	fs := flag.NewFlagSet("cluster replay --pollux", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: cluster replay --pollux DIR --policy tiresias|optimus|pollux --load L [--offline] [flags]

Runs the Pollux paper's (OSDI'21) workloads — distributed training jobs on
16 nodes × 4 GPUs in 60-second rounds — under its Tiresias+TunedJobs,
Optimus+Oracle+TunedJobs or Pollux policy, as DIR/MODEL.md specifies the
artifact's simulator. DIR is laid out like ../shared/traces/pollux
(workloads*/, traces/, results-jobload/, MODEL.md). --out writes one CSV
per workload, workload-N_<policy>_<load>.csv (name,submit_s,jct_s,restarts);
--compare prints each workload's average JCT beside the published one and
how many jobs' JCTs are equal. Tiresias and Optimus are deterministic and
reproduce every published JCT; Pollux's search is random (the reference's
unseeded), so it is drawn from --seeds and compared on average. Each run's
CSV is written as it finishes; every 10 s a line says how many runs are
done, where each running one is (simulated time, jobs completed) and about
how long is left; Ctrl-C stops, keeping and tabling the finished runs.
--workers runs that many at once (Pollux's: one per CPU by default); a
run's result does not depend on how many run beside it.

Without --offline the workload runs live on a virtual clock: an embedded
NATS server, 64 GPU actors on 16 nodes, the scheduler; each job is
submitted over the bus at its second, the scheduler's training rounds
decide every 60 s and the GPU actors step the jobs. Its CSVs are the
offline run's, byte for byte (Pollux's too, seed for seed). --offline
runs the same decisions on the pure model (milliseconds; Pollux's search
takes about a minute a run either way).

  cluster replay --pollux ../shared/traces/pollux --policy tiresias --load 1.0 --out pollux/ --compare
  cluster replay --pollux ../shared/traces/pollux --policy optimus --load 1.5 --offline --compare
  cluster replay --pollux ../shared/traces/pollux --policy pollux --load 1.0 --offline --seeds 1-3 --compare

flags:
`)
		fs.PrintDefaults()
	}
	dir := fs.String("pollux", filepath.Join(tracesDir(), "..", "pollux"), "the Pollux data folder")
	pol := fs.String("policy", "tiresias", "the training policy: "+strings.Join(policy.Names[pollux.Maker](), ", "))
	loadText := fs.String("load", "1.0", "relative load: "+strings.Join(polluxLoads, ", ")+" (workloads/ for 1.0, else workloads-L/)")
	workload := fs.Int("workload", 0, "run only workload-N.csv (0: every workload of the load)")
	offline := fs.Bool("offline", false, "run on the pure model, without actors or bus")
	out := fs.String("out", "", "folder for workload-N_<policy>_<load>.csv (with several --seeds, one per seed: ..._seed-K.csv)")
	compare := fs.Bool("compare", false, "print each workload's average JCT beside the published one (DIR/results-jobload)")
	workersFlag := fs.Int("workers", 0, "runs at once (0: one per CPU for --policy pollux, whose runs take seconds to minutes; else one)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the runs to this file (go tool pprof reads it)")
	seedsText := fs.String("seeds", "1", "pollux's search seeds (7, 1-3 or 1,5): each seed runs every workload; --compare shows their mean and spread")
	asJSON := fs.Bool("json", false, "print the runs' figures (with --compare, the comparison) as JSON instead of a table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	load, loadName, err := parsePolluxLoad(*loadText)
	if err != nil {
		return err
	}
	if _, err := pollux.NewPolicy(*pol); err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	seeds, err := parseSeeds(*seedsText)
	if err != nil {
		return err
	}
	if *pol != "pollux" && len(seeds) > 1 {
		return fmt.Errorf("--seeds: %s draws nothing at random; several seeds are for --policy pollux", *pol)
	}
	if *workersFlag < 0 {
		return fmt.Errorf("--workers: %d; give how many runs at once (1 or more), or 0 for the default", *workersFlag)
	}
	if *workload < 0 {
		return fmt.Errorf("--workload: %d is not a workload number", *workload)
	}
	model, err := loadPolluxModel(*dir)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	folder := pollux.LoadFolder(*dir, load)
	files, _ := filepath.Glob(filepath.Join(folder, "workload-*.csv"))
	if *workload > 0 {
		files = []string{filepath.Join(folder, fmt.Sprintf("workload-%d.csv", *workload))}
	}
	if len(files) == 0 {
		return fmt.Errorf("--load %s: no workload-N.csv in %s", loadName, folder)
	}
	slices.SortFunc(files, func(a, b string) int { return pollux.WorkloadNumber(a) - pollux.WorkloadNumber(b) })
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	var published *pollux.Published
	if *compare {
		if published, err = pollux.ReadPublished(*dir, *pol, load); err != nil {
			return fmt.Errorf("--compare: the published results: %w", err)
		}
	}
	// One run per workload and seed; Pollux's (seconds to minutes each)
	// run side by side, the deterministic two (milliseconds) one by one,
	// so their wall column is one run's time.
	type run struct {
		name string
		seed int64
		res  *pollux.Result
		took time.Duration
		err  error
		// second and completed are how far the run has got (progress);
		// jobs its workload's size.
		second, completed, jobs atomic.Int64
		started                 atomic.Int64 // unix nanoseconds; 0: not yet
	}
	var runs []*run
	for _, f := range files {
		for _, seed := range seeds {
			runs = append(runs, &run{name: strings.TrimSuffix(filepath.Base(f), ".csv"), seed: seed})
		}
	}
	workers := *workersFlag
	if workers == 0 {
		workers = 1
		if *pol == "pollux" {
			workers = runtime.GOMAXPROCS(0)
		}
	}
	switch {
	case *pol == "pollux":
		fmt.Fprintf(os.Stderr, "pollux: %d runs (%d workloads × %d seeds), %d at a time; a run takes seconds to minutes\n", len(runs), len(files), len(seeds), workers)
	case !*offline:
		fmt.Fprintf(os.Stderr, "pollux: %d live runs (the cluster on a virtual clock), %d at a time\n", len(runs), workers)
	}
	ctx, stop := interruptContext()
	defer stop()
	// Each run's CSV is written as soon as it finishes, so that Ctrl-C
	// keeps every finished run.
	writeRun := func(r *run) error {
		if *out == "" {
			return nil
		}
		name := fmt.Sprintf("%s_%s_%s.csv", r.name, *pol, loadName)
		if len(seeds) > 1 {
			name = fmt.Sprintf("%s_%s_%s_seed-%d.csv", r.name, *pol, loadName, r.seed)
		}
		return writeFile(filepath.Join(*out, name), func(w *os.File) error {
			fmt.Fprintln(w, "name,submit_s,jct_s,restarts")
			for _, j := range r.res.Jobs {
				fmt.Fprintf(w, "%s,%d,%d,%d\n", j.Name, j.Submit, j.JCT(), max(j.Restarts, 0))
			}
			return nil
		})
	}
	var doneMu sync.Mutex
	done := 0
	var walls []time.Duration
	progressDone := make(chan struct{})
	go func() {
		// Progress every 10 s of wall time: runs done, where each running
		// one is, and an estimate of what is left.
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-progressDone:
				return
			case <-tick.C:
			}
			doneMu.Lock()
			line := fmt.Sprintf("pollux: %d of %d runs done", done, len(runs))
			for _, r := range runs {
				if r.started.Load() == 0 || r.res != nil || r.err != nil {
					continue
				}
				line += fmt.Sprintf("; %s seed %d at %s simulated", r.name, r.seed, (time.Duration(r.second.Load()) * time.Second).String())
				if n := r.jobs.Load(); n > 0 {
					line += fmt.Sprintf(", %d of %d jobs done", r.completed.Load(), n)
				}
			}
			if len(walls) > 0 {
				var sum time.Duration
				for _, w := range walls {
					sum += w
				}
				left := time.Duration(float64(sum) / float64(len(walls)) * float64(len(runs)-done) / float64(workers))
				line += fmt.Sprintf("; about %s left", left.Round(time.Second))
			}
			doneMu.Unlock()
			fmt.Fprintln(os.Stderr, line)
		}
	}()
	var writeErr error
	inParallel(len(runs), workers, func(i int) {
		r := runs[i]
		if ctx.Err() != nil {
			return
		}
		specs, err := pollux.ReadWorkload(filepath.Join(folder, r.name+".csv"))
		if err != nil {
			doneMu.Lock()
			r.err = err
			doneMu.Unlock()
			return
		}
		p, _ := pollux.NewSeededPolicy(*pol, uint64(r.seed))
		start := time.Now()
		r.jobs.Store(int64(len(specs)))
		r.started.Store(start.UnixNano())
		var res *pollux.Result
		if *offline {
			res, err = pollux.RunContext(ctx, model, specs, pollux.Reference, p, func(pr pollux.Progress) {
				r.second.Store(int64(pr.Second))
				r.completed.Store(int64(pr.Completed))
			})
		} else {
			var live *sim.PolluxRun
			if live, err = sim.RunPollux(ctx, model, specs, pollux.Reference, p, nil, func(d time.Duration) { r.second.Store(int64(d / time.Second)) }); err == nil {
				res = live.Result
				fmt.Fprintf(os.Stderr, "pollux: %s live: %s simulated in %s\n", r.name, live.Run.Length.Round(time.Second), live.Run.Wall.Round(time.Millisecond))
			}
		}
		doneMu.Lock()
		defer doneMu.Unlock()
		r.res, r.err, r.took = res, err, time.Since(start)
		if err != nil {
			return
		}
		done++
		walls = append(walls, r.took)
		if err := writeRun(r); err != nil && writeErr == nil {
			writeErr = err
		}
		if workers > 1 {
			fmt.Fprintf(os.Stderr, "pollux: %s seed %d done in %s (%d of %d)\n", r.name, r.seed, r.took.Round(time.Second), done, len(runs))
		}
		if polluxRunFinished != nil {
			polluxRunFinished(done)
		}
	})
	close(progressDone)
	if writeErr != nil {
		return writeErr
	}
	interrupted := ctx.Err() != nil
	var finished []*run
	for _, r := range runs {
		if r.err != nil && !(interrupted && errors.Is(r.err, context.Canceled)) {
			return fmt.Errorf("%s: %w", r.name, r.err)
		}
		if r.res != nil {
			finished = append(finished, r)
		}
	}
	runs = finished
	// w is where the table and sentences go; with --json they are not
	// printed, and figures is printed instead.
	var w io.Writer = os.Stdout
	if *asJSON {
		w = io.Discard
	}
	figures := polluxFigures{Policy: *pol, Load: loadName, Seeds: seeds}
	if published == nil {
		for _, r := range runs {
			avg, _, approx := runFigures(r.res, nil)
			figures.Runs = append(figures.Runs, polluxRunFigures{Workload: r.name, Seed: r.seed, Jobs: len(r.res.Jobs), AvgJCT: avg, Approximate: approx, WallS: r.took.Seconds()})
			fmt.Fprintf(w, "%s: %d jobs, average JCT %s s%s (%s)\n", r.name, len(r.res.Jobs), strconv.FormatFloat(avg, 'f', -1, 64),
				seedNote(*pol, r.seed), r.took.Round(time.Millisecond))
			if approx > 0 {
				fmt.Fprintf(w, "  %d jobs ran on a shape outside MODEL.md's Appendix B (interpolated step times): their JCTs are approximate\n", approx)
			}
		}
	} else {
		fmt.Fprintf(w, "%-12s %6s %16s %16s %8s %12s %7s %8s\n", "workload", "jobs", "avg JCT ours", "published", "diff", "equal JCTs", "interp", "wall")
		totalEqual, totalJobs, totalApprox := 0, 0, 0
		// diffs: each workload's mean off the published (%); seedsOff:
		// its farthest seed's distance from it (%).
		var diffs, seedsOff []float64
		for i := 0; i < len(runs); {
			k := i
			for k < len(runs) && runs[k].name == runs[i].name {
				k++
			}
			group := runs[i:k]
			i = k
			name := group[0].name
			want, ok := published.JCTs[name]
			var avgs []float64
			equal, approx, jobs := 0, 0, 0
			var took time.Duration
			for _, r := range group {
				avg, eq, ap := runFigures(r.res, want)
				avgs = append(avgs, avg)
				equal += eq
				approx += ap
				jobs += len(r.res.Jobs)
				took += r.took
			}
			mean := 0.0
			for _, a := range avgs {
				mean += a
			}
			mean /= float64(len(avgs))
			ours := strconv.FormatFloat(mean, 'f', -1, 64)
			if len(seeds) > 1 {
				ours = fmt.Sprintf("%.1f", mean)
			}
			wf := polluxWorkloadFigures{Workload: name, Jobs: len(group[0].res.Jobs), AvgJCT: mean, SeedAvgJCTs: avgs, EqualJCTs: equal, JobsCompared: jobs, Approximate: approx, WallS: took.Seconds()}
			if !ok {
				figures.Workloads = append(figures.Workloads, wf)
				fmt.Fprintf(w, "%-12s %6d %16s %16s %8s %12s %7d %8s\n", name, len(group[0].res.Jobs), ours, "-", "-", "-", approx, took.Round(time.Millisecond))
				continue
			}
			pub := published.Avgs[name]
			diff := 100 * (mean/pub - 1)
			lo, hi := slices.Min(avgs), slices.Max(avgs)
			wf.Published, wf.DiffPct = &pub, &diff
			if len(seeds) > 1 {
				wf.PublishedIs = whereInRange(pub, lo, hi)
			}
			figures.Workloads = append(figures.Workloads, wf)
			diffs = append(diffs, diff)
			totalEqual += equal
			totalJobs += jobs
			totalApprox += approx
			fmt.Fprintf(w, "%-12s %6d %16s %16s %+7.2f%% %12s %7d %8s\n", name, len(group[0].res.Jobs), ours,
				strconv.FormatFloat(pub, 'f', -1, 64), diff, fmt.Sprintf("%d/%d", equal, jobs), approx, took.Round(time.Millisecond))
			if len(seeds) > 1 {
				fmt.Fprintf(w, "%-12s %6s %16s seeds %s: %.1f .. %.1f (%+.2f%% .. %+.2f%%), the published %s\n", "", "", "", *seedsText, lo, hi, 100*(lo/pub-1), 100*(hi/pub-1), wf.PublishedIs)
			}
			seedsOff = append(seedsOff, seedsOffBy(avgs, pub))
		}
		fmt.Fprintf(w, "\n%s at load %s: %d of %d jobs' JCTs equal the published", *pol, loadName, totalEqual, totalJobs)
		if len(seeds) > 1 {
			fmt.Fprintf(w, " (over %d seeds)", len(seeds))
		}
		fmt.Fprintln(w)
		if len(diffs) > 0 {
			fmt.Fprintf(w, "average JCT off the published by %+.2f%% .. %+.2f%% per workload\n", slices.Min(diffs), slices.Max(diffs))
			if len(seeds) > 1 {
				within5, within8 := withinTargets(diffs, seedsOff)
				figures.WithinFivePct, figures.EverySeedWithinEightPct = &within5, &within8
				fmt.Fprintf(w, "%d of %d workloads within 5%% of the published on the seeds' mean; on %d of %d every seed is within 8%%\n", within5, len(diffs), within8, len(diffs))
			}
		}
		if totalApprox > 0 {
			fmt.Fprintf(w, "%d jobs ran on shapes outside MODEL.md's Appendix B (interpolated step times, column interp): their JCTs are approximate\n", totalApprox)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(figures); err != nil {
			return err
		}
	}
	if *out != "" && len(runs) > 0 {
		fmt.Fprintf(os.Stderr, "wrote %s: workload-N_%s_%s.csv\n", *out, *pol, loadName)
	}
	if interrupted {
		kept := "kept above"
		if *out != "" {
			kept += " and in " + *out
		}
		return fmt.Errorf("interrupted: %d of %d runs finished (%s)", len(runs), len(files)*len(seeds), kept)
	}
	return nil
}

// progressEvery is how often a long replay says where it is, in wall time.
const progressEvery = 10 * time.Second

// polluxRunFinished, when set (by tests), hears each finished run of
// cluster replay --pollux, with how many have finished.
var polluxRunFinished func(done int)

// runFigures are a run's average JCT, how many of its jobs' JCTs equal
// want's, and how many jobs ran at an interpolated step time.
func runFigures(res *pollux.Result, want map[string]int) (avg float64, equal, approx int) {
	for _, j := range res.Jobs {
		if jct, ok := want[j.Name]; ok && jct == j.JCT() {
			equal++
		}
		if j.Approximate > 0 {
			approx++
		}
	}
	return res.MeanJCT(), equal, approx
}

// seedNote names the seed of a pollux run.
func seedNote(pol string, seed int64) string {
	if pol != "pollux" {
		return ""
	}
	return fmt.Sprintf(", seed %d", seed)
}

// parsePolluxLoad reads --load: one of polluxLoads, and its name as the
// files spell it (1 → "1.0").
func parsePolluxLoad(text string) (float64, string, error) {
	load, err := strconv.ParseFloat(text, 64)
	name := strconv.FormatFloat(load, 'f', 1, 64)
	if err != nil || !slices.Contains(polluxLoads, name) {
		return 0, "", fmt.Errorf("--load: %q is not one of %s", text, strings.Join(polluxLoads, ", "))
	}
	return load, name, nil
}

// inParallel calls do(0) … do(n−1), workers at a time, and returns when
// all have returned.
func inParallel(n, workers int, do func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range max(workers, 1) {
		wg.Go(func() {
			for i := range next {
				do(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// loadPolluxModel reads the Pollux data folder dir, saying where the data
// comes from when it cannot (replay --pollux and compare --pollux).
func loadPolluxModel(dir string) (*pollux.Model, error) {
	model, err := pollux.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("--pollux: %w (the Pollux artifact's data: github.com/petuum/adaptdl, branch osdi21-artifact, simulator/; here in ../shared/traces/pollux)", err)
	}
	return model, nil
}

// trainingConfig is the scheduler's training round for `cluster
// --training-data DIR --training-policy P`: DIR's model, P deciding every
// 60 simulated seconds (MODEL.md §1) from the run's start.
func trainingConfig(dir, policy string) (*core.TrainingConfig, error) {
	p, err := pollux.NewPolicy(policy)
	if err != nil {
		return nil, fmt.Errorf("--training-policy: %w", err)
	}
	m, err := pollux.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("--training-data: %w (a Pollux data folder, like ../shared/traces/pollux)", err)
	}
	return &core.TrainingConfig{Model: m, Policy: p, Interval: time.Duration(pollux.Reference.Interval) * time.Second}, nil
}

// whereInRange says where the published average lies against the seeds'
// range of averages: "inside", "below" or "above" it.
func whereInRange(published, lo, hi float64) string {
	switch {
	case published < lo:
		return "below"
	case published > hi:
		return "above"
	}
	return "inside"
}

// seedsOffBy is how far (%, unsigned) the farthest of the seeds' averages
// is from the published one.
func seedsOffBy(avgs []float64, published float64) float64 {
	worst := 0.0
	for _, a := range avgs {
		worst = max(worst, math.Abs(100*(a/published-1)))
	}
	return worst
}

// withinTargets counts the workloads whose seeds' mean is within 5 % of
// the published average (diffs, signed %) and those whose every seed is
// within 8 % (seedsOff, each workload's farthest seed): issue 46's two
// bars for a random policy compared with single published runs.
func withinTargets(diffs, seedsOff []float64) (within5, within8 int) {
	for i, d := range diffs {
		if math.Abs(d) <= 5 {
			within5++
		}
		if seedsOff[i] <= 8 {
			within8++
		}
	}
	return within5, within8
}

// polluxFigures is what `replay --pollux --json` prints: each run's
// figures, and with --compare each workload's beside the published.
type polluxFigures struct {
	Policy string  `json:"policy"`
	Load   string  `json:"load"`
	Seeds  []int64 `json:"seeds"`
	// Runs: without --compare, one per workload and seed.
	Runs []polluxRunFigures `json:"runs,omitempty"`
	// Workloads: with --compare, one per workload over the seeds.
	Workloads []polluxWorkloadFigures `json:"workloads,omitempty"`
	// WithinFivePct and EverySeedWithinEightPct count the workloads
	// whose seeds' mean is within 5 % of the published and those whose
	// every seed is within 8 % (with several seeds).
	WithinFivePct           *int `json:"within_5pct,omitempty"`
	EverySeedWithinEightPct *int `json:"every_seed_within_8pct,omitempty"`
}

// polluxRunFigures is one run's average JCT (seconds) and how many of
// its jobs ran on a shape outside Appendix B.
type polluxRunFigures struct {
	Workload    string  `json:"workload"`
	Seed        int64   `json:"seed"`
	Jobs        int     `json:"jobs"`
	AvgJCT      float64 `json:"avg_jct_s"`
	Approximate int     `json:"approximate_jobs"`
	WallS       float64 `json:"wall_s"`
}

// polluxWorkloadFigures is one workload compared: the mean of the seeds'
// average JCTs (seconds), each seed's, the published average and how far
// off (%), where the published lies against the seeds' range (inside,
// below, above; with several seeds), and the jobs whose JCT equals the
// published one.
type polluxWorkloadFigures struct {
	Workload     string    `json:"workload"`
	Jobs         int       `json:"jobs"`
	AvgJCT       float64   `json:"avg_jct_s"`
	SeedAvgJCTs  []float64 `json:"seed_avg_jct_s"`
	Published    *float64  `json:"published_avg_jct_s,omitempty"`
	DiffPct      *float64  `json:"diff_pct,omitempty"`
	PublishedIs  string    `json:"published_is,omitempty"`
	EqualJCTs    int       `json:"equal_jcts"`
	JobsCompared int       `json:"jobs_compared"`
	Approximate  int       `json:"approximate_jobs"`
	WallS        float64   `json:"wall_s"`
}
