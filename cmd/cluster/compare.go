package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/gpusched/gpusched/actors/jobgen"
	"github.com/gpusched/gpusched/chaos"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/openb"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/replay"
	"github.com/gpusched/gpusched/sim"
)

// comparePolicies are the policies `cluster compare` runs by default.
const comparePolicies = "binpack,spread,best-fit,fgd"

// hasFlag reports whether args carry the boolean flag name (-name or --name).
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "-"+name || a == "--"+name || a == "-"+name+"=true" || a == "--"+name+"=true" {
			return true
		}
	}
	return false
}

// timedCommand is `cluster compare` and `cluster replay --timed`: the same
// workload under each policy on a virtual clock, one table side by side.
func timedCommand(cmd string, args []string) error {
	replayMode := cmd == "replay"
	fs := flag.NewFlagSet("cluster "+cmd, flag.ContinueOnError)
	fs.Usage = func() {
		if replayMode {
			fmt.Fprint(fs.Output(), `usage: cluster replay --timed [flags]

Replays a trace in time on a virtual clock: each openb pod arrives at its
creation_time and runs for its time in the trace (deletion_time −
scheduled_time), with the priority its qos maps to (LS and Guaranteed high
and not preemptible, Burstable medium, BE low), queueing and preempting as
the live cluster does. --jobs replays a JSON-lines trace instead (one job
spec per line plus submit_at; see docs/SIMULATION.md).

  cluster replay --timed --pods ../shared/traces/alibaba-openb/openb_pod_list_default.csv \
      --nodes ../shared/traces/alibaba-openb/openb_node_list_gpu_node.csv --policy fgd --out timed/

flags:
`)
		} else {
			fmt.Fprint(fs.Output(), `usage: cluster compare [flags]

Runs the same seeded workload — the generated job mix at --rate for --hours,
or a trace (--pods, --jobs) — under each policy on a virtual clock (the
same actors and bus, as fast as the machine allows) and prints one table
side by side. --out writes each run's per-job CSV and time series.

  cluster compare --policies binpack,spread,best-fit,fgd --hours 72 --seed 1
  cluster compare --cluster clusters/mixed.yaml --rate 10 --out results/

flags:
`)
		}
		fs.PrintDefaults()
	}
	dir := tracesDir()
	defPolicies, defHours := comparePolicies, 72.0
	if replayMode {
		defPolicies, defHours = "", 0
	}
	fs.Bool("timed", replayMode, "time-driven replay (cluster replay --timed)")
	pol := fs.String("policy", "fgd", "placement policy of a single run (cluster replay --timed)")
	pols := fs.String("policies", defPolicies, `policies to compare, comma-separated, or "all"`)
	queue := fs.String("queue", policy.DefaultQueue, "queue order of every run: "+strings.Join(policy.Names[policy.QueueSort](), ", "))
	roundEvery := fs.Duration("round", 0, "re-allocate every this much simulated time in every run (0: never)")
	preempt := fs.String("preempt", policy.DefaultPreempt, "preemption rule of every run: fewest-victims or none")
	filters := fs.String("filter", "", "filters of every run, comma-separated: "+strings.Join(policy.Names[policy.Filter](), ", "))
	oversubscribe := fs.String("oversubscribe", "1", "oversubscription ratios, comma-separated (e.g. 1,inf): how far past 100% of its compute binpack, spread, first-fit and smallest-fit may fill a GPU; with several, each such policy runs once per ratio, as a column named like binpack-x2")
	hours := fs.Float64("hours", defHours, "simulated hours of arrivals (a trace: all of it unless given)")
	seed := fs.Uint64("seed", 1, "seed of the generated workload and of the policies' draws")
	seeds := fs.String("seeds", "", "several seeds, e.g. 1-5 or 1,3: each cell of the table is the mean over them")
	gpus := fs.String("gpus", model.DefaultGPUs, "cluster shape: COUNTxMODEL,...")
	clusterFile := fs.String("cluster", "", "cluster file: YAML (docs/CLUSTERS.md) or an openb node list CSV")
	nodesFile := fs.String("nodes", filepath.Join(dir, "openb_node_list_gpu_node.csv"), "openb node list (the cluster, with --pods)")
	rate := fs.Float64("rate", jobgen.DefaultRate, "generated jobs per simulated hour")
	podsFile := fs.String("pods", "", "openb pod list to replay in time instead of the generated mix")
	jobsFile := fs.String("jobs", "", "JSON-lines trace to replay instead of the generated mix (a job spec per line plus submit_at)")
	out := fs.String("out", "", "folder for jobs-<policy>.csv, series-<policy>.csv, summary.txt and summary.json")
	interference := fs.Float64("interference", model.DefaultInterference, "noisy-neighbour coefficient (0 turns it off)")
	drain := fs.Duration("drain", sim.DefaultDrain, "simulated time after the last arrival for the remaining jobs to end")
	sample := fs.Duration("sample", 0, "simulated period of the metrics time series (0: about 2,000 samples)")
	starve := fs.Duration("starvation-age", policy.DefaultStarvationAge, "simulated wait after which a head-of-line job holds GPUs")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "runs at once")
	quiet := fs.Bool("quiet", false, "no progress bar")
	monkey := fs.String("chaos", "", "faults in every run, drawn from its seed in simulated time: e.g. 'kill=2/h,hang=1/h,partition=1/h,delay=1/h,drop=1/h,kill-scheduler=1/h' (per simulated hour)")
	if replayMode {
		*podsFile = filepath.Join(dir, "openb_pod_list_default.csv")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if replayMode && set["jobs"] && !set["pods"] {
		*podsFile = ""
	}
	if (*podsFile != "" || *jobsFile != "") && !set["hours"] {
		*hours = 0 // a trace runs whole unless --hours cuts it
	}
	if *podsFile != "" && *jobsFile != "" {
		return errors.New("--pods and --jobs: give one trace, not both")
	}
	policies := strings.Split(*pols, ",")
	switch *pols {
	case "":
		policies = []string{*pol}
	case "all":
		policies = policy.Names[policy.Policy]()
	}
	for _, p := range policies {
		if _, err := policy.Lookup[policy.Policy](p); err != nil {
			return fmt.Errorf("--policies: %v", err)
		}
	}
	if err := checkSchedulerFlags(*queue, *preempt, *filters, policy.DefaultRound, *roundEvery); err != nil {
		return err
	}
	var ratios []float64
	for _, text := range strings.Split(*oversubscribe, ",") {
		var r ratioFlag
		if err := r.Set(strings.TrimSpace(text)); err != nil {
			return fmt.Errorf("--oversubscribe: %v", err)
		}
		ratios = append(ratios, float64(r))
	}
	if *hours < 0 {
		return errors.New("--hours must not be negative")
	}
	var monkeySpec *chaos.MonkeySpec
	if *monkey != "" {
		spec, err := chaos.ParseMonkey(*monkey)
		if err != nil {
			return err
		}
		monkeySpec = &spec
	}
	if *rate <= 0 && *podsFile == "" && *jobsFile == "" {
		return errors.New("--rate must be positive (or replay a trace with --pods or --jobs)")
	}
	if *hours == 0 && *podsFile == "" && *jobsFile == "" {
		return errors.New("--hours must be positive for a generated workload")
	}
	if *interference < 0 {
		return errors.New("--interference must not be negative")
	}
	if *drain < 0 || *sample < 0 {
		return errors.New("--drain and --sample must not be negative")
	}

	var arrivals []jobgen.Arrival
	var workload *policy.Workload
	switch {
	case *podsFile != "":
		pods, err := openb.ReadPods(*podsFile)
		if err != nil {
			return fmt.Errorf("--pods: %w", err)
		}
		// Fragmentation is measured against the trace's typical pods,
		// known in advance as in the FGD paper.
		workload = replay.Workload(pods)
		if arrivals, err = sim.PodArrivals(pods); err != nil {
			return fmt.Errorf("--pods: %w", err)
		}
	case *jobsFile != "":
		var err error
		if arrivals, err = sim.ReadJobLines(*jobsFile); err != nil {
			return fmt.Errorf("--jobs: %w", err)
		}
	}
	// The cluster: --cluster, else --gpus when given, else the openb nodes
	// with an openb trace, else the reference cluster.
	var shape model.Shape
	var err error
	switch {
	case *clusterFile != "":
		shape, err = cluster.LoadShape(*clusterFile)
		if err != nil {
			return fmt.Errorf("--cluster: %w", err)
		}
	case set["nodes"] || (*podsFile != "" && !set["gpus"]):
		nodes, err := openb.ReadNodes(*nodesFile)
		if err != nil {
			return fmt.Errorf("--nodes: %w", err)
		}
		if shape, err = openb.Shape(nodes); err != nil {
			return fmt.Errorf("--nodes: %w", err)
		}
	default:
		if shape, err = model.ParseGPUs(*gpus); err != nil {
			return fmt.Errorf("--gpus: %w", err)
		}
	}
	defer cluster.TuneGC(max(1, *workers) * shape.GPUCount())() // the runs at once
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	seedList := []uint64{*seed}
	if *seeds != "" {
		list, err := parseSeeds(*seeds)
		if err != nil {
			return err
		}
		seedList = seedList[:0]
		for _, x := range list {
			if x < 0 {
				return fmt.Errorf("--seeds %q: seeds are not negative", *seeds)
			}
			seedList = append(seedList, uint64(x))
		}
	}
	// A column: a policy at one ratio. A policy the ratio does not bind
	// (the paper's, unless the capacity filter is in force) runs once.
	type column struct {
		name, policy string
		ratio        float64
	}
	var columns []column
	capacityFilter := slices.Contains(strings.Split(*filters, ","), "capacity")
	for _, name := range policies {
		p, _ := policy.Lookup[policy.Policy](name)
		if len(ratios) == 1 || !(policy.BindsCapacity(p) || capacityFilter) {
			columns = append(columns, column{name, name, ratios[0]})
			continue
		}
		for _, r := range ratios {
			columns = append(columns, column{name + "-x" + ratioText(r), name, r})
		}
	}
	type run struct {
		column
		seed uint64
	}
	var runs []run
	for _, c := range columns {
		for _, sd := range seedList {
			runs = append(runs, run{c, sd})
		}
	}
	horizon := time.Duration(*hours * float64(time.Hour))
	if horizon == 0 && len(arrivals) > 0 {
		horizon = arrivals[len(arrivals)-1].At
	}
	var bar *progressbar.ProgressBar
	var mu sync.Mutex
	reached := make([]float64, len(runs))
	if !*quiet {
		bar = progressbar.NewOptions64(int64(len(runs))*int64(max(1, horizon.Hours())),
			progressbar.OptionSetDescription(fmt.Sprintf("simulated hours, %d run(s)", len(runs))),
			progressbar.OptionSetWriter(os.Stderr), progressbar.OptionShowCount(), progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond))
	}
	results := make([]*sim.Result, len(runs))
	errs := make([]error, len(runs))
	sem := make(chan struct{}, max(1, *workers))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cfg := sim.Config{Shape: shape, Policy: r.policy, Queue: *queue, Preempt: *preempt, Filters: *filters, Oversubscribe: r.ratio, RoundEvery: *roundEvery, Seed: r.seed, Rate: *rate, Arrivals: arrivals, Hours: *hours,
				Drain: *drain, Sample: *sample, Interference: *interference, StarvationAge: *starve, Workload: workload, Chaos: monkeySpec}
			if bar != nil {
				cfg.Progress = func(d time.Duration) {
					mu.Lock()
					defer mu.Unlock()
					reached[i] = min(d.Hours(), max(1, horizon.Hours()))
					var total float64
					for _, h := range reached {
						total += h
					}
					bar.Set64(int64(total))
				}
			}
			results[i], errs[i] = sim.Run(ctx, cfg)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s seed %d: %w", r.name, r.seed, errs[i])
			} else {
				results[i].Policy = r.name
			}
		})
	}
	wg.Wait()
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(os.Stderr)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	sums := make([]sim.Summary, len(results))
	cols := make([]sim.Column, len(columns))
	for i, r := range results {
		sums[i] = sim.Summarize(r)
	}
	for i, c := range columns {
		cols[i] = sim.Column{Policy: c.name, Runs: sums[i*len(seedList) : (i+1)*len(seedList)]}
	}
	seedText := fmt.Sprintf("seed %d", seedList[0])
	if len(seedList) > 1 {
		seedText = fmt.Sprintf("seeds %s (each cell: the mean over the %d seeds)", *seeds, len(seedList))
	}
	what := fmt.Sprintf("generated mix at %g jobs/h for %gh, %s", *rate, *hours, seedText)
	if *podsFile != "" || *jobsFile != "" {
		what = fmt.Sprintf("%d arrivals from %s, %s", len(arrivals), *podsFile+*jobsFile, seedText)
	}
	if *queue != policy.DefaultQueue {
		// Said only when not the default, so that default runs print as before.
		what += ", queue order " + *queue
	}
	if *roundEvery > 0 {
		what += ", a " + policy.DefaultRound + " round every " + roundEvery.String()
	}
	if *filters != "" && *filters != "none" {
		what += ", filters " + *filters
	}
	if *preempt != policy.DefaultPreempt {
		what += ", preemption " + *preempt
	}
	if len(ratios) == 1 && ratios[0] != 1 {
		what += ", oversubscription ×" + ratioText(ratios[0])
	}
	if *monkey != "" {
		what += ", chaos " + *monkey
	}
	fmt.Printf("%s on %d GPUs (%d nodes); interference %g\n\n", what, shape.GPUCount(), len(shape.Nodes), *interference)
	if err := sim.WriteColumns(os.Stdout, cols); err != nil {
		return err
	}
	if *out == "" {
		return nil
	}
	for _, r := range results {
		name := r.Policy
		if len(seedList) > 1 {
			name += "-" + strconv.FormatUint(r.Seed, 10)
		}
		if err := writeFile(filepath.Join(*out, "jobs-"+name+".csv"), func(f *os.File) error { return sim.WriteJobs(f, r.Jobs) }); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(*out, "series-"+name+".csv"), func(f *os.File) error { return sim.WriteSeries(f, r.Series) }); err != nil {
			return err
		}
		if len(r.Faults) > 0 {
			if err := writeFile(filepath.Join(*out, "faults-"+name+".csv"), func(f *os.File) error { return sim.WriteFaults(f, r.Faults) }); err != nil {
				return err
			}
		}
	}
	if err := writeFile(filepath.Join(*out, "summary.txt"), func(f *os.File) error {
		fmt.Fprintf(f, "%s on %d GPUs (%d nodes); interference %g\n\n", what, shape.GPUCount(), len(shape.Nodes), *interference)
		return sim.WriteColumns(f, cols)
	}); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(*out, "summary.json"), func(f *os.File) error {
		runs := make([]sim.SummaryJSON, len(sums))
		for i := range sums {
			runs[i] = sums[i].JSON()
		}
		enc := json.NewEncoder(f)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"workload": what, "gpus": shape.GPUCount(), "nodes": len(shape.Nodes),
			"seeds": seedList, "interference": *interference, "runs": runs})
	}); err != nil {
		return err
	}
	files := "jobs-<policy>.csv, series-<policy>.csv"
	if len(seedList) > 1 {
		files = "jobs-<policy>-<seed>.csv, series-<policy>-<seed>.csv"
	}
	fmt.Fprintf(os.Stderr, "wrote %s: %s, summary.txt, summary.json\n", *out, files)
	return nil
}

// ratioText writes an oversubscription ratio as a column name has it
// ("2", "1.5", "inf").
func ratioText(r float64) string {
	if math.IsInf(r, 1) {
		return "inf"
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// checkSchedulerFlags checks the scheduler's extension-point flags that
// `cluster` and `cluster compare` share, naming the flag at fault.
func checkSchedulerFlags(queue, preempt, filters, roundName string, round time.Duration) error {
	if _, err := policy.Lookup[policy.QueueSort](queue); err != nil {
		return fmt.Errorf("--queue: %v", err)
	}
	if round < 0 {
		return fmt.Errorf("--round: must not be negative, not %s", round)
	}
	if _, err := policy.Lookup[policy.Round](roundName); err != nil {
		return fmt.Errorf("--round-policy: %v", err)
	}
	if _, err := policy.Lookup[policy.Preempt](preempt); err != nil {
		return fmt.Errorf("--preempt: %v", err)
	}
	if _, err := policy.ParseFilters(filters); err != nil {
		return fmt.Errorf("--filter: %v", err)
	}
	return nil
}
