package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/pollux"
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
// workloads under its Tiresias and Optimus policies, each job's JCT
// beside the published one.
func polluxCommand(args []string) error {
	fs := flag.NewFlagSet("cluster replay --pollux", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: cluster replay --pollux DIR --policy tiresias|optimus --load L --offline [flags]

Runs the Pollux paper's (OSDI'21) workloads — distributed training jobs on
16 nodes × 4 GPUs in 60-second rounds — under its Tiresias+TunedJobs or
Optimus+Oracle+TunedJobs policy, as DIR/MODEL.md specifies the artifact's
simulator. DIR is laid out like ../shared/traces/pollux (workloads*/,
traces/, results-jobload/, MODEL.md). --out writes one CSV per workload,
workload-N_<policy>_<load>.csv (name,submit_s,jct_s,restarts); --compare
prints each workload's average JCT beside the published one and how many
jobs' JCTs are equal. Offline only for now (the pure core, --offline).

  cluster replay --pollux ../shared/traces/pollux --policy tiresias --load 1.0 --offline --out pollux/ --compare

flags:
`)
		fs.PrintDefaults()
	}
	dir := fs.String("pollux", filepath.Join(tracesDir(), "..", "pollux"), "the Pollux data folder")
	pol := fs.String("policy", "tiresias", "tiresias or optimus (pollux: not yet)")
	loadText := fs.String("load", "1.0", "relative load: "+strings.Join(polluxLoads, ", ")+" (workloads/ for 1.0, else workloads-L/)")
	workload := fs.Int("workload", 0, "run only workload-N.csv (0: every workload of the load)")
	offline := fs.Bool("offline", false, "run on the pure core (required for now)")
	out := fs.String("out", "", "folder for workload-N_<policy>_<load>.csv")
	compare := fs.Bool("compare", false, "print each workload's average JCT beside the published one (DIR/results-jobload)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	load, err := strconv.ParseFloat(*loadText, 64)
	if err != nil || !slices.Contains(polluxLoads, strconv.FormatFloat(load, 'f', 1, 64)) {
		return fmt.Errorf("--load: %q is not one of %s", *loadText, strings.Join(polluxLoads, ", "))
	}
	loadName := strconv.FormatFloat(load, 'f', 1, 64)
	if *pol == "pollux" {
		return errors.New("--policy pollux: not built yet (issue 20 lands in steps: Tiresias and Optimus offline first); use tiresias or optimus")
	}
	if *pol != "tiresias" && *pol != "optimus" {
		return fmt.Errorf("--policy: %q is not tiresias or optimus", *pol)
	}
	if !*offline {
		return errors.New("--pollux runs --offline only for now: the run through the live actors is the next step of issue 20; add --offline")
	}
	if *workload < 0 {
		return fmt.Errorf("--workload: %d is not a workload number", *workload)
	}
	model, err := pollux.Load(*dir)
	if err != nil {
		return fmt.Errorf("--pollux: %w (the Pollux artifact's data: github.com/petuum/adaptdl, branch osdi21-artifact, simulator/; here in ../shared/traces/pollux)", err)
	}
	folder := pollux.LoadFolder(*dir, load)
	files, _ := filepath.Glob(filepath.Join(folder, "workload-*.csv"))
	if *workload > 0 {
		files = []string{filepath.Join(folder, fmt.Sprintf("workload-%d.csv", *workload))}
	}
	if len(files) == 0 {
		return fmt.Errorf("--load %s: no workload-N.csv in %s", loadName, folder)
	}
	slices.SortFunc(files, func(a, b string) int { return workloadNumber(a) - workloadNumber(b) })
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
		fmt.Printf("%-12s %6s %16s %16s %12s %8s\n", "workload", "jobs", "avg JCT ours", "published", "equal JCTs", "wall")
	}
	totalEqual, totalJobs := 0, 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".csv")
		specs, err := pollux.ReadWorkload(f)
		if err != nil {
			return err
		}
		p, _ := pollux.NewPolicy(*pol)
		start := time.Now()
		res, err := pollux.Run(model, specs, pollux.Reference, p)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		took := time.Since(start)
		if *out != "" {
			path := filepath.Join(*out, fmt.Sprintf("%s_%s_%s.csv", name, *pol, loadName))
			if err := writeFile(path, func(w *os.File) error {
				fmt.Fprintln(w, "name,submit_s,jct_s,restarts")
				for _, j := range res.Jobs {
					fmt.Fprintf(w, "%s,%d,%d,%d\n", j.Name, j.Submit, j.JCT(), max(j.Restarts, 0))
				}
				return nil
			}); err != nil {
				return err
			}
		}
		sum := 0
		for _, j := range res.Jobs {
			sum += j.JCT()
		}
		avg := float64(sum) / float64(len(res.Jobs))
		if published == nil {
			fmt.Printf("%s: %d jobs, average JCT %s s (%s)\n", name, len(res.Jobs), strconv.FormatFloat(avg, 'f', -1, 64), took.Round(time.Millisecond))
			continue
		}
		want, ok := published.JCTs[name]
		if !ok {
			fmt.Printf("%-12s %6d %16s %16s %12s %8s\n", name, len(res.Jobs), strconv.FormatFloat(avg, 'f', -1, 64), "-", "-", took.Round(time.Millisecond))
			continue
		}
		equal := 0
		for _, j := range res.Jobs {
			if jct, ok := want[j.Name]; ok && jct == j.JCT() {
				equal++
			}
		}
		totalEqual += equal
		totalJobs += len(res.Jobs)
		fmt.Printf("%-12s %6d %16s %16s %12s %8s\n", name, len(res.Jobs), strconv.FormatFloat(avg, 'f', -1, 64),
			strconv.FormatFloat(published.Avgs[name], 'f', -1, 64), fmt.Sprintf("%d/%d", equal, len(res.Jobs)), took.Round(time.Millisecond))
	}
	if published != nil {
		fmt.Printf("\n%s at load %s: %d of %d jobs' JCTs equal the published\n", *pol, loadName, totalEqual, totalJobs)
	}
	if *out != "" {
		fmt.Fprintf(os.Stderr, "wrote %s: workload-N_%s_%s.csv\n", *out, *pol, loadName)
	}
	return nil
}

// workloadNumber is N of a workload-N.csv path (0 when it has none).
func workloadNumber(path string) int {
	base := strings.TrimSuffix(filepath.Base(path), ".csv")
	n, _ := strconv.Atoi(base[strings.LastIndex(base, "-")+1:])
	return n
}
