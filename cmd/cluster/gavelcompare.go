package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/gpusched/gpusched/gavel"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/sim"
)

// gavelComparePolicies are the policies `cluster compare --gavel` runs
// unless told: the exact four and the heterogeneity-agnostic and -aware
// max-min fairness.
const gavelComparePolicies = "fifo,isolated,allox,gandiva,max_min_fairness,max_min_fairness_perf,min_total_duration"

// gavelCompareCommand is `cluster compare --gavel DIR`: one Gavel trace
// under several policies and seeds, side by side — JCT, makespan,
// utilisation and finish-time fairness ρ (each job's JCT over its JCT
// under Isolated on the same trace).
func gavelCompareCommand(args []string) error {
	fs := flag.NewFlagSet("cluster compare --gavel", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: cluster compare --gavel DIR [--policies P,...] [--placements all|P,... [--queue Q]] (--static N | --lam S[,S...] --window A-B) [--cluster V:P:K] [--seeds S] [--multi-gpu] [--out DIR] [--json]

Runs one Gavel trace (as cluster replay --gavel draws it) under each policy
for each seed, on the pure model, and prints one column per policy, the
mean over the seeds: the measured jobs' JCT (mean, p50, p90, p99), the
makespan (when the last measured job completed), utilisation, and
finish-time fairness: each job's ρ, its JCT over its JCT under Isolated on
the same trace (Isolated is run for it whether listed or not), as mean,
p50, p90, max and the share of jobs with ρ > 1. Percentiles pool the
seeds' jobs. --out writes gavel-<policy>-<seed>.csv (each measured job's
JCT and ρ) as each run finishes, and summary.txt; observer report draws
them (JCT and ρ CDFs per policy). Several rates (--lam 14400,7200,3600)
sweep the input rate as the paper's Figure 8 does: a table per rate, then
the mean JCT by rate with each policy's over the last one named; --out
gets lam-S/ per rate and sweep.csv, which observer report draws (JCT by
rate). --placements runs the same traces live under the scheduler's own
placement policies too (all, or a list), with --queue's order, a column
each: every job a typed job on its scale factor's whole GPUs of one type,
run alone at the table's rates until it completes — no rounds, no time
slicing, no packing.

  cluster compare --gavel ../shared/traces/gavel --static 60 --multi-gpu --seeds 0-2
  cluster compare --gavel ../shared/traces/gavel --lam 4800 --window 50-150 --policies gandiva,max_min_fairness,max_min_fairness_perf
  cluster compare --gavel ../shared/traces/gavel --lam 4800 --window 50-150 --policies gandiva,max_min_fairness_perf --placements all
  cluster compare --gavel ../shared/traces/gavel --lam 14400,7200,4800,3600 --window 50-150 --seeds 0-2 \
      --policies gandiva,max_min_fairness,max_min_fairness_perf --out sweep/

flags:
`)
		fs.PrintDefaults()
	}
	dir := fs.String("gavel", filepath.Join(tracesDir(), "..", "gavel"), "the Gavel data folder (data/, runs/, MODEL.md)")
	policies := fs.String("policies", gavelComparePolicies, "policies, comma-separated: "+strings.Join(gavel.PolicyNames(), ", "))
	static := fs.Int("static", 0, "a static trace: this many jobs, all arriving at time 0")
	lamText := fs.String("lam", "", "mean inter-arrival time in seconds (continuous arrivals; with --window); a list (14400,7200,3600) sweeps the input rate")
	window := fs.String("window", "", "with --lam: the measured jobs A-B (ids A to B-1)")
	clusterText := fs.String("cluster", "8:8:8", "V100:P100:K80 GPU counts, one GPU per server")
	seedsText := fs.String("seeds", "0", "seeds: one, a range or a list (0, 0-2, 0,42)")
	multiGPU := fs.Bool("multi-gpu", false, "draw multi-GPU jobs (scale factors 2, 4, 8)")
	out := fs.String("out", "", "folder for gavel-<policy>-<seed>.csv and summary.txt")
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	placements := fs.String("placements", "", "also run the same traces live under these placement policies of the scheduler's own, a column each (comma-separated, or all: "+strings.Join(policy.Names[policy.Policy](), ", ")+")")
	queueOrder := fs.String("queue", policy.DefaultQueue, "the queue order of the --placements runs: "+strings.Join(policy.Names[policy.QueueSort](), ", "))
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var traces []gavel.Config
	lams := []float64{0}
	if *lamText != "" {
		lams = nil
		for _, f := range strings.Split(*lamText, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || v <= 0 {
				return fmt.Errorf("--lam: %q is not a mean inter-arrival time in seconds (or a list of them)", f)
			}
			lams = append(lams, v)
		}
	}
	for _, lam := range lams {
		base, err := gavelTrace(*clusterText, *static, lam, *window, *multiGPU)
		if err != nil {
			return err
		}
		traces = append(traces, base)
	}
	sweep := len(traces) > 1
	// outFor is the folder a trace's files go in: out, or out/lam-S in a sweep.
	outFor := func(c gavel.Config) string {
		if *out == "" || !sweep {
			return *out
		}
		return filepath.Join(*out, "lam-"+strconv.FormatFloat(c.Lam, 'f', -1, 64))
	}
	seeds, err := parseSeeds(*seedsText)
	if err != nil || len(seeds) == 0 || seeds[0] < 0 {
		return fmt.Errorf("--seeds: %q is not a seed, a range or a list (0, 0-2, 0,42)", *seedsText)
	}
	var names []string
	for _, p := range strings.Split(*policies, ",") {
		p = strings.TrimSpace(p)
		if _, err := gavel.NewPolicy(p, 0); err != nil {
			return fmt.Errorf("--policies: %w", err)
		}
		if !slices.Contains(names, p) {
			names = append(names, p)
		}
	}
	runPolicies := names
	if !slices.Contains(runPolicies, "isolated") {
		runPolicies = append(slices.Clone(names), "isolated") // ρ's baseline
	}
	data, err := gavel.Load(*dir)
	if err != nil {
		return fmt.Errorf("--gavel: %w", err)
	}
	runs, err := gavelRuns(traces, runPolicies, seeds)
	if err != nil {
		return err
	}
	placed, err := gavelPlacements(*placements, *queueOrder)
	if err != nil {
		return err
	}
	for _, p := range placed {
		if slices.Contains(names, p) {
			continue
		}
		names = append(names, p)
		for _, base := range traces {
			for _, seed := range seeds {
				cfg := base
				cfg.Policy, cfg.Seed = "fifo", uint64(seed) // (a valid Gavel name; the run is p's)
				runs = append(runs, &gavelRun{cfg: cfg, placement: p})
			}
		}
	}
	for _, base := range traces {
		if *out != "" {
			if err := os.MkdirAll(outFor(base), 0o755); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
		}
	}
	ctx, stop := interruptContext()
	defer stop()
	workers := min(runtime.GOMAXPROCS(0), len(runs))
	fmt.Fprintf(os.Stderr, "gavel compare: %d runs, %d at a time\n", len(runs), workers)
	// Isolated first, so that each other run can write its ρ when it ends.
	slices.SortStableFunc(runs, func(a, b *gavelRun) int {
		return boolOrder(b.column() == "isolated") - boolOrder(a.column() == "isolated")
	})
	// Each run's file is written as soon as it and its seed's Isolated run
	// have finished, so that Ctrl-C keeps every finished run.
	var mu sync.Mutex
	// baseline is each trace's and seed's Isolated run.
	type traceSeed struct {
		lam  float64
		seed uint64
	}
	baseline := map[traceSeed]*gavel.Result{}
	baselineOf := func(c gavel.Config) *gavel.Result { return baseline[traceSeed{c.Lam, c.Seed}] }
	written := map[*gavelRun]bool{}
	var writeErr error
	flush := func() {
		for _, r := range runs {
			b := baselineOf(r.cfg)
			if *out == "" || written[r] || r.res == nil || r.err != nil || b == nil || !slices.Contains(names, r.column()) {
				continue
			}
			written[r] = true
			if err := writeGavelRho(outFor(r.cfg), r, b); err != nil && writeErr == nil {
				writeErr = err
			}
		}
	}
	done := 0
	inParallel(len(runs), workers, func(i int) {
		r := runs[i]
		if ctx.Err() != nil {
			return
		}
		start := time.Now()
		var res *gavel.Result
		var err error
		if r.placement != "" {
			res, err = sim.RunGavelPlaced(ctx, data, r.cfg, r.placement, *queueOrder, nil)
		} else {
			res, err = gavel.Run(ctx, data, r.cfg)
		}
		mu.Lock()
		defer mu.Unlock()
		r.res, r.err, r.took = res, err, time.Since(start)
		if err != nil {
			return
		}
		done++
		fmt.Fprintf(os.Stderr, "gavel compare: %s done in %s (%d of %d)\n", r.name(), r.took.Round(time.Millisecond), done, len(runs))
		if r.column() == "isolated" {
			baseline[traceSeed{r.cfg.Lam, r.cfg.Seed}] = res
		}
		flush()
	})
	if writeErr != nil {
		return writeErr
	}
	for _, r := range runs {
		if r.err != nil && ctx.Err() == nil {
			return fmt.Errorf("%s: %w", r.name(), r.err)
		}
	}
	var all []gavelTable
	for _, base := range traces {
		t := gavelTable{LamS: base.Lam}
		if base.Lam > 0 {
			t.JobsPerHour = 3600 / base.Lam
		}
		for _, p := range names {
			var finished []*gavelRun
			for _, r := range runs {
				if r.cfg.Lam == base.Lam && r.column() == p && r.res != nil && r.err == nil {
					finished = append(finished, r)
				}
			}
			if len(finished) > 0 {
				t.Columns = append(t.Columns, gavelColumnOf(p, finished, baselineOf))
			}
		}
		all = append(all, t)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		var v any = all[0].Columns
		if sweep {
			v = all
		}
		if err := enc.Encode(v); err != nil {
			return err
		}
	} else {
		for _, t := range all {
			if len(t.Columns) == 0 && ctx.Err() != nil {
				continue // interrupted before any of its runs finished
			}
			if sweep {
				fmt.Printf("\nmean inter-arrival %s s (%.3g jobs/h):\n", strconv.FormatFloat(t.LamS, 'f', -1, 64), t.JobsPerHour)
			}
			writeGavelColumns(os.Stdout, t.Columns)
		}
		if sweep {
			fmt.Println()
			writeGavelSweep(os.Stdout, all, names)
		}
	}
	if *out != "" {
		for i, base := range traces {
			if len(all[i].Columns) == 0 {
				continue
			}
			if err := writeFile(filepath.Join(outFor(base), "summary.txt"), func(f *os.File) error { writeGavelColumns(f, all[i].Columns); return nil }); err != nil {
				return err
			}
		}
		if sweep {
			if err := writeFile(filepath.Join(*out, "sweep.csv"), func(f *os.File) error { return writeGavelSweepCSV(f, all) }); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "wrote %s: lam-S/gavel-<policy>-<seed>.csv and summary.txt per rate, sweep.csv (observer report %s draws JCT by rate)\n", *out, *out)
		} else {
			fmt.Fprintf(os.Stderr, "wrote %s: gavel-<policy>-<seed>.csv, summary.txt (observer report %s draws them)\n", *out, *out)
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: the table shows the runs that finished")
	}
	return nil
}

// gavelPlacements are the placement policies --placements names ("all":
// every one), checked, with the queue order checked too.
func gavelPlacements(list, queue string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	known := policy.Names[policy.Policy]()
	if !slices.Contains(policy.Names[policy.QueueSort](), queue) {
		return nil, fmt.Errorf("--queue: unknown queue order %q (want one of %s)", queue, strings.Join(policy.Names[policy.QueueSort](), ", "))
	}
	if list == "all" {
		return known, nil
	}
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(known, p) {
			return nil, fmt.Errorf("--placements: unknown placement policy %q (want all, or some of %s)", p, strings.Join(known, ", "))
		}
		out = append(out, p)
	}
	return out, nil
}

// gavelTable is one trace's comparison: its rate (none for a static
// trace) and a column per policy.
type gavelTable struct {
	LamS        float64       `json:"lam_s"`
	JobsPerHour float64       `json:"jobs_per_hour"`
	Columns     []gavelColumn `json:"policies"`
}

// writeGavelSweep prints the sweep: a row per rate, each policy's mean
// JCT, and each policy's over the last one's (the last named is the
// yardstick: max_min_fairness_perf in the paper's Figure 8 order).
func writeGavelSweep(w io.Writer, all []gavelTable, names []string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	last := names[len(names)-1]
	header := "jobs/h\t"
	for _, n := range names {
		header += n + " JCT\t"
	}
	for _, n := range names[:len(names)-1] {
		header += n + " ÷ " + last + "\t"
	}
	fmt.Fprintln(tw, header)
	for _, t := range all {
		if len(t.Columns) == 0 {
			continue // no run of it finished (an interrupted sweep)
		}
		mean := map[string]float64{}
		for _, c := range t.Columns {
			mean[c.Policy] = c.JCTMeanS
		}
		line := strconv.FormatFloat(t.JobsPerHour, 'g', 3, 64) + "\t"
		for _, n := range names {
			if v, ok := mean[n]; ok {
				line += strconv.FormatFloat(v/3600, 'f', 2, 64) + "h\t"
			} else {
				line += "–\t" // none of its runs finished
			}
		}
		for _, n := range names[:len(names)-1] {
			a, okA := mean[n]
			b, okB := mean[last]
			if okA && okB {
				line += strconv.FormatFloat(a/b, 'f', 2, 64) + "×\t"
			} else {
				line += "–\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// writeGavelSweepCSV writes the sweep's figures, a row per rate and policy.
func writeGavelSweepCSV(w io.Writer, all []gavelTable) error {
	fmt.Fprintln(w, "lam_s,jobs_per_hour,policy,seeds,jct_mean_s,jct_p50_s,jct_p90_s,makespan_s,utilisation,rho_mean,rho_p90")
	for _, t := range all {
		for _, c := range t.Columns {
			_, err := fmt.Fprintf(w, "%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s\n", g(t.LamS), g(t.JobsPerHour), c.Policy, c.Runs, g(c.JCTMeanS), g(c.JCTP50S),
				g(c.JCTP90S), g(c.MakespanS), g(c.Utilisation), g(c.RhoMean), g(c.RhoP90))
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// g writes a float as it reads back (empty for NaN).
func g(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

// gavelColumn is one policy's figures over its seeds: means of the
// per-run figures, percentiles over the pooled jobs.
type gavelColumn struct {
	Policy      string
	Runs        int
	Jobs        int
	JCTMeanS    float64
	JCTP50S     float64
	JCTP90S     float64
	JCTP99S     float64
	MakespanS   float64
	Utilisation float64
	RhoMean     float64
	RhoP50      float64
	RhoP90      float64
	RhoMax      float64
	RhoOverOne  float64
	WallS       float64
}

// gavelColumnOf is policy's column over its finished runs (one per
// seed), each run's ρ against baseline's run of its trace and seed (nil:
// none).
func gavelColumnOf(policy string, runs []*gavelRun, baseline func(gavel.Config) *gavel.Result) gavelColumn {
	c := gavelColumn{Policy: policy, Runs: len(runs)}
	var jcts, rhos []float64
	var avg, makespan, util float64
	for _, r := range runs {
		avg += r.res.AverageJCT
		makespan += r.res.Makespan
		util += r.res.Utilization
		c.WallS += r.took.Seconds()
		jcts = append(jcts, r.res.WindowJCTs()...)
		if base := baseline(r.cfg); base != nil {
			rho := gavel.Rho(r.res, base)
			for _, id := range slices.Sorted(maps.Keys(rho)) {
				rhos = append(rhos, rho[id])
			}
		}
	}
	n := float64(len(runs))
	c.Jobs = len(jcts)
	c.JCTMeanS, c.MakespanS, c.Utilisation = avg/n, makespan/n, util/n
	c.JCTP50S, c.JCTP90S, c.JCTP99S = quantile(jcts, 0.5), quantile(jcts, 0.9), quantile(jcts, 0.99)
	c.RhoMean, c.RhoP50, c.RhoP90, c.RhoMax, c.RhoOverOne = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
	if len(rhos) > 0 {
		over := 0
		for _, x := range rhos {
			if x > 1 {
				over++
			}
		}
		c.RhoMean, c.RhoP50, c.RhoP90 = stat.Mean(rhos, nil), quantile(rhos, 0.5), quantile(rhos, 0.9)
		c.RhoMax, c.RhoOverOne = slices.Max(rhos), float64(over)/float64(len(rhos))
	}
	return c
}

// MarshalJSON writes the column with names and units, ρ's figures null
// when there is no Isolated baseline.
func (c gavelColumn) MarshalJSON() ([]byte, error) {
	orNull := func(x float64) *float64 {
		if math.IsNaN(x) {
			return nil
		}
		return &x
	}
	return json.Marshal(struct {
		Policy      string   `json:"policy"`
		Runs        int      `json:"runs"`
		Jobs        int      `json:"jobs"`
		JCTMeanS    float64  `json:"jct_mean_s"`
		JCTP50S     float64  `json:"jct_p50_s"`
		JCTP90S     float64  `json:"jct_p90_s"`
		JCTP99S     float64  `json:"jct_p99_s"`
		MakespanS   float64  `json:"makespan_s"`
		Utilisation float64  `json:"utilisation"`
		RhoMean     *float64 `json:"rho_mean"`
		RhoP50      *float64 `json:"rho_p50"`
		RhoP90      *float64 `json:"rho_p90"`
		RhoMax      *float64 `json:"rho_max"`
		RhoOverOne  *float64 `json:"rho_over_1"`
		WallS       float64  `json:"wall_s"`
	}{c.Policy, c.Runs, c.Jobs, c.JCTMeanS, c.JCTP50S, c.JCTP90S, c.JCTP99S, c.MakespanS, c.Utilisation,
		orNull(c.RhoMean), orNull(c.RhoP50), orNull(c.RhoP90), orNull(c.RhoMax), orNull(c.RhoOverOne), c.WallS})
}

// quantile is the q-quantile of xs (gonum's stat.Quantile, linear
// interpolation); NaN for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return stat.Quantile(q, stat.LinInterp, s, nil)
}

// writeGavelColumns prints the comparison: a row per figure, a column
// per policy, with names and units.
func writeGavelColumns(w io.Writer, cols []gavelColumn) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "figure\t"
	for _, c := range cols {
		header += c.Policy + "\t"
	}
	fmt.Fprintln(tw, header)
	row := func(name string, value func(c gavelColumn) string) {
		line := name + "\t"
		for _, c := range cols {
			line += value(c) + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	hours := func(s float64) string {
		if math.IsNaN(s) {
			return "-"
		}
		return strconv.FormatFloat(s/3600, 'f', 2, 64) + "h"
	}
	ratio := func(x float64) string {
		if math.IsNaN(x) {
			return "-"
		}
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
	row("seeds", func(c gavelColumn) string { return strconv.Itoa(c.Runs) })
	row("measured jobs completed", func(c gavelColumn) string { return strconv.Itoa(c.Jobs) })
	row("JCT mean", func(c gavelColumn) string { return hours(c.JCTMeanS) })
	row("JCT p50", func(c gavelColumn) string { return hours(c.JCTP50S) })
	row("JCT p90", func(c gavelColumn) string { return hours(c.JCTP90S) })
	row("JCT p99", func(c gavelColumn) string { return hours(c.JCTP99S) })
	row("makespan", func(c gavelColumn) string { return hours(c.MakespanS) })
	row("utilisation", func(c gavelColumn) string { return strconv.FormatFloat(100*c.Utilisation, 'f', 1, 64) + "%" })
	row("ρ mean (JCT / Isolated's)", func(c gavelColumn) string { return ratio(c.RhoMean) })
	row("ρ p50", func(c gavelColumn) string { return ratio(c.RhoP50) })
	row("ρ p90", func(c gavelColumn) string { return ratio(c.RhoP90) })
	row("ρ max", func(c gavelColumn) string { return ratio(c.RhoMax) })
	row("jobs with ρ > 1", func(c gavelColumn) string {
		if math.IsNaN(c.RhoOverOne) {
			return "-"
		}
		return strconv.FormatFloat(100*c.RhoOverOne, 'f', 1, 64) + "%"
	})
	row("wall time (mean)", func(c gavelColumn) string {
		return (time.Duration(c.WallS / float64(max(c.Runs, 1)) * float64(time.Second))).Round(time.Millisecond).String()
	})
	tw.Flush()
}

// writeGavelRho writes a run's measured jobs with their JCT and ρ as
// gavel-<policy>-<seed>.csv.
func writeGavelRho(dir string, r *gavelRun, base *gavel.Result) error {
	var rho map[int]float64
	if base != nil {
		rho = gavel.Rho(r.res, base)
	}
	name := fmt.Sprintf("gavel-%s-%d.csv", r.column(), r.cfg.Seed)
	return writeFile(filepath.Join(dir, name), func(f *os.File) error {
		fmt.Fprintln(f, "job_id,submit_s,jct_s,job_type,scale_factor,rho")
		for _, j := range r.res.Jobs {
			if !j.InWindow || math.IsNaN(j.JCT) {
				continue
			}
			x, ok := rho[j.ID]
			rs := ""
			if ok {
				rs = strconv.FormatFloat(x, 'g', -1, 64)
			}
			fmt.Fprintf(f, "%d,%s,%s,%q,%d,%s\n", j.ID, strconv.FormatFloat(j.Arrival, 'g', -1, 64), strconv.FormatFloat(j.JCT, 'g', -1, 64), j.Type, j.Scale, rs)
		}
		return nil
	})
}
