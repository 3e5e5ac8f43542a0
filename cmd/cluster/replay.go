package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/openb"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/replay"
)

// tracesDir is where the openb trace is looked for by default.
func tracesDir() string {
	if d := os.Getenv("GPUSCHED_TRACES"); d != "" {
		return filepath.Join(d, "alibaba-openb")
	}
	return filepath.Join("..", "shared", "traces", "alibaba-openb")
}

// paperPolicies is "all": the six policies of the FGD paper.
func paperPolicies() []string {
	var out []string
	for _, p := range replay.PaperPolicies {
		out = append(out, p.Name)
	}
	return out
}

// interruptContext is the context a long command (a paper replay or comparison) stops on: Ctrl-C or
// SIGTERM (tests put their own).
var interruptContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// parseSeeds reads "42", "42-51" or "42,44,50".
func parseSeeds(s string) ([]int64, error) {
	var out []int64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseInt(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--seeds %q: %q is not a seed (use 42, 42-51 or 42,43)", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseInt(hi, 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("--seeds %q: %q is not a range FROM-TO", s, part)
			}
		}
		for x := a; x <= b; x++ {
			out = append(out, x)
		}
	}
	return out, nil
}

type replayRun struct {
	workload string
	pods     []openb.Pod
	policy   string
	seed     int64
	curve    []replay.Point
	took     time.Duration
	dropped  int
}

// replayUsageHead is the first lines of cluster replay -h: every mode of
// the command and the flag that selects it.
const replayUsageHead = `usage: cluster replay [flags]                  the FGD paper's protocol (below)
       cluster replay --pollux DIR --policy P --load L [--workload N] …   the Pollux paper's runs (cluster replay --pollux DIR -h)
       cluster replay --gavel DIR --policy P (--static N | --lam S --window A-B) …   the Gavel paper's runs (cluster replay --gavel DIR -h)
       cluster replay --pal DIR --policy P --queue Q --workload N …   the PAL paper's runs (cluster replay --pal DIR -h)
       cluster replay --timed --jobs FILE …           a trace of your own on the virtual clock (cluster replay --timed -h)
`

func replayCommand(args []string) error {
	fs := flag.NewFlagSet("cluster replay", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), replayUsageHead+`
Replays the FGD paper's protocol on an openb trace: shuffle the pods,
resample them to --inflate times the cluster's GPUs, permute the nodes,
schedule one pod at a time, nothing departs, a pod that fits nowhere is
dropped. By default each run goes through the live actors and the bus (an
embedded NATS server, the scheduler, a node actor per node and a GPU actor
per GPU); --offline runs the same policies on the pure core.

  cluster replay --policy fgd --seed 42 --out fgd42.csv
  cluster replay --offline --policies all --seeds 42-51 --out results/ \
      --compare ../shared/traces/alibaba-openb/fgd-expected-results

flags:
`)
		fs.PrintDefaults()
	}
	dir := tracesDir()
	nodesFile := fs.String("nodes", filepath.Join(dir, "openb_node_list_gpu_node.csv"), "openb node list (the cluster)")
	podsFile := fs.String("pods", filepath.Join(dir, "openb_pod_list_default.csv"), "openb pod list(s), comma-separated (the workloads)")
	pol := fs.String("policy", "fgd", "placement policy of a single run")
	pols := fs.String("policies", "", `policies of a matrix, comma-separated, or "all" (the paper's six)`)
	seed := fs.Int64("seed", 42, "seed of a single run")
	seeds := fs.String("seeds", "", "seeds of a matrix: 42-51, or 42,43")
	inflate := fs.Float64("inflate", replay.DefaultInflate, "resample the pods to this many times the cluster's GPUs")
	out := fs.String("out", "", "CSV file of a single run, or folder of a matrix's CSVs (<workload>_<policy>_<seed>.csv)")
	offline := fs.Bool("offline", false, "run on the pure core, without actors or bus")
	compare := fs.String("compare", "", "folder of the published results (fgd-expected-results) to compare with")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "offline runs at once")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *inflate <= 0 {
		return errors.New("--inflate must be positive (the paper uses 1.3)")
	}
	policies := []string{*pol}
	if *pols != "" {
		policies = strings.Split(*pols, ",")
		if *pols == "all" {
			policies = paperPolicies()
		}
	}
	for _, p := range policies {
		if _, err := policy.Lookup[policy.Policy](p); err != nil {
			return fmt.Errorf("--policy: %v", err)
		}
	}
	seedList := []int64{*seed}
	if *seeds != "" {
		var err error
		if seedList, err = parseSeeds(*seeds); err != nil {
			return err
		}
	}
	nodes, err := openb.ReadNodes(*nodesFile)
	if err != nil {
		return fmt.Errorf("--nodes: %w (the openb trace is in ../shared/traces or $GPUSCHED_TRACES; it comes from github.com/alibaba/clusterdata, cluster-trace-gpu-v2023)", err)
	}
	var published replay.Published
	if *compare != "" {
		if published, err = replay.ReadPublished(*compare); err != nil {
			return fmt.Errorf("--compare: %w", err)
		}
	}
	var runs []*replayRun
	for _, pf := range strings.Split(*podsFile, ",") {
		pods, err := openb.ReadPods(pf)
		if err != nil {
			return fmt.Errorf("--pods: %w", err)
		}
		for _, p := range policies {
			for _, s := range seedList {
				runs = append(runs, &replayRun{workload: openb.WorkloadName(pf), pods: pods, policy: p, seed: s})
			}
		}
	}
	matrix := len(runs) > 1
	if matrix && *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	if !matrix && *out != "" {
		// Checked before the run, not found out after it.
		if err := checkOutFile(*out); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	var bar *progressbar.ProgressBar
	if !*quiet {
		if matrix {
			bar = progressbar.NewOptions(len(runs), progressbar.OptionSetDescription("replay runs"), progressbar.OptionSetWriter(os.Stderr),
				progressbar.OptionShowCount(), progressbar.OptionSetElapsedTime(true), progressbar.OptionSetPredictTime(true))
		}
	}
	one := func(r *replayRun) error {
		plan := replay.Prepare(nodes, r.pods, r.seed, *inflate)
		var rbar *progressbar.ProgressBar
		if !*quiet && !matrix {
			rbar = progressbar.NewOptions(len(plan.Pods), progressbar.OptionSetDescription(fmt.Sprintf("%s %s seed %d", r.workload, r.policy, r.seed)),
				progressbar.OptionSetWriter(os.Stderr), progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond))
		}
		progress := func(done int) {
			if rbar != nil {
				rbar.Set(done)
			}
		}
		t0 := time.Now()
		var placements []replay.Placement
		var m *replay.Mirror
		if *offline {
			placements, m, err = replay.Offline(&plan, mustPolicy(r.policy), progress)
		} else {
			placements, m, _, err = replay.Live(ctx, &plan, r.policy, replay.LiveOptions{Logger: zap.NewNop(), Progress: progress})
		}
		if err != nil {
			return fmt.Errorf("%s %s seed %d: %w", r.workload, r.policy, r.seed, err)
		}
		if rbar != nil {
			rbar.Finish()
			fmt.Fprintln(os.Stderr)
		}
		r.took = time.Since(t0)
		for _, p := range placements {
			if p.Node == "" {
				r.dropped++
			}
		}
		r.curve = replay.Curve(m.Events(), plan.CapacityMilli)
		if *out != "" {
			path := *out
			if matrix {
				path = filepath.Join(*out, fmt.Sprintf("%s_%s_%d.csv", r.workload, r.policy, r.seed))
			}
			if err := writeCurveFile(path, r.curve); err != nil {
				return err
			}
		}
		if !matrix {
			mode := "live actors"
			if *offline {
				mode = "offline"
			}
			last := r.curve[len(r.curve)-1]
			at100 := r.curve[100]
			fmt.Printf("%s, %s, seed %d (%s): %d pods, %d dropped, %s\n", r.workload, r.policy, r.seed, mode, len(plan.Pods), r.dropped, r.took.Round(time.Millisecond))
			fmt.Printf("at 100%% arrived: allocation %.2f%%, fragmentation %.2f%% of capacity, ratio %.2f%%\n", at100.Alloc, at100.Frag, at100.FragRatio)
			fmt.Printf("at 130%% arrived: allocation %.2f%%, fragmentation %.2f%% of capacity, ratio %.2f%%\n", last.Alloc, last.Frag, last.FragRatio)
		}
		return nil
	}
	if *offline && matrix {
		err = runParallel(ctx, runs, max(1, *workers), func(r *replayRun) error {
			err := one(r)
			if bar != nil {
				bar.Add(1)
			}
			return err
		})
	} else {
		for _, r := range runs {
			if err = one(r); err != nil {
				break
			}
			if bar != nil {
				bar.Add(1)
			}
		}
	}
	if err != nil {
		return err
	}
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(os.Stderr)
	}
	if matrix {
		fmt.Printf("%d runs in %s\n", len(runs), time.Since(start).Round(time.Millisecond))
	}
	if published != nil {
		printComparison(os.Stdout, published, runs)
	}
	return nil
}

func mustPolicy(name string) policy.Policy {
	p, err := policy.Lookup[policy.Policy](name)
	if err != nil {
		panic(err) // names were checked when the flags were read
	}
	return p
}

func writeCurveFile(path string, curve []replay.Point) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := replay.WriteCurve(f, curve); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runParallel runs fn over runs on workers goroutines; the first error stops it.
func runParallel(ctx context.Context, runs []*replayRun, workers int, fn func(*replayRun) error) error {
	work := make(chan *replayRun)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range workers {
		wg.Go(func() {
			for r := range work {
				if err := fn(r); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, r := range runs {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		work <- r
	}
	close(work)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// printComparison prints, per workload and policy, how many of the 131
// points match per seed and the largest difference, then the means next
// to the published means at the summary's arrived points.
func printComparison(w io.Writer, pub replay.Published, runs []*replayRun) {
	type key struct{ workload, policy string }
	byKey := map[key]map[int64][]replay.Point{}
	var keys []key
	for _, r := range runs {
		k := key{r.workload, r.policy}
		if byKey[k] == nil {
			byKey[k] = map[int64][]replay.Point{}
			keys = append(keys, k)
		}
		byKey[k][r.seed] = r.curve
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nPER SEED: points of 131 matching the published curve on allocation, fragmentation and ratio (±0.01); first arrived % that differs; largest difference")
	fmt.Fprintln(tw, "workload\tpolicy\tseeds matching all 131\tper seed (matched/first diff/max diff)")
	var comps []replay.Comparison
	for _, k := range keys {
		c := replay.Compare(pub, k.workload, k.policy, byKey[k])
		comps = append(comps, c)
		full := 0
		var parts []string
		for _, s := range c.Seeds {
			if s.Missing {
				parts = append(parts, fmt.Sprintf("%d: no published run", s.Seed))
				continue
			}
			if s.Matched == replay.MaxArrived+1 {
				full++
			}
			parts = append(parts, fmt.Sprintf("%d: %d/%d/%.2f", s.Seed, s.Matched, s.FirstDiff, s.MaxDiff))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\n", k.workload, k.policy, full, len(c.Seeds), strings.Join(parts, "  "))
	}
	tw.Flush()
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\nMEANS over the seeds: allocation % ours / published at arrived %; largest difference of the mean curves (pp) over 0..130\t")
	header := []string{"workload", "policy"}
	for _, p := range replay.SummaryPoints {
		header = append(header, strconv.Itoa(p))
	}
	header = append(header, "max Δalloc", "max Δfrag", "max Δratio")
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, c := range comps {
		if len(c.Ours) == 0 {
			continue
		}
		row := []string{c.Workload, c.Policy}
		for _, p := range replay.SummaryPoints {
			row = append(row, fmt.Sprintf("%.2f/%.2f", c.Ours[p].Alloc, c.Theirs[p].Alloc))
		}
		row = append(row, fmt.Sprintf("%.3f", c.MaxAlloc), fmt.Sprintf("%.3f", c.MaxFrag), fmt.Sprintf("%.3f", c.MaxRatio))
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()

}

// checkOutFile checks that a single run's --out names a file that can be
// written: not a folder, in a folder that exists.
func checkOutFile(path string) error {
	if strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(filepath.Separator)) {
		return fmt.Errorf("--out %s: a folder, but a single run writes one CSV file (name the file, e.g. %sfgd42.csv; a folder is for several policies or seeds)", path, path)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("--out %s: is a folder, but a single run writes one CSV file (name the file, e.g. %s; a folder is for several policies or seeds)", path, filepath.Join(path, "run.csv"))
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("--out %s: the folder %s does not exist", path, dir)
	}
	return nil
}
