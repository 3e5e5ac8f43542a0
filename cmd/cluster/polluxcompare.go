package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/pollux"
	"github.com/gpusched/gpusched/sim"
)

// polluxCompareCommand is `cluster compare --pollux DIR`: one of the
// Pollux paper's workloads under several of its policies, side by side in
// the table `cluster compare` prints for the generated mix (JCT, queueing,
// utilisation, preemptions), on the pure core.
func polluxCompareCommand(args []string) error {
	fs := flag.NewFlagSet("cluster compare --pollux", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: cluster compare --pollux DIR [--load L] [--workload N] [--policies tiresias,optimus,pollux] [--seeds S] [--out DIR]

Runs one of the Pollux paper's workloads (DIR laid out like
../shared/traces/pollux) under its policies on the pure core and prints the
comparison table of cluster compare, one column per policy: JCT and
queueing (submission to first placement) percentiles, utilisation (a GPU
given to a job counts busy), busy GPU-hours, preemptions (GPUs taken from
a job before it completed) and lost work (the GPU-hours held by restart
delays: a job keeps its progress when preempted or resized). Energy,
fragmentation and co-location slowdown are not modelled here ("-").
Pollux's column is the mean over --seeds. The nine placement policies do
not run these workloads: their jobs span nodes, which the live cluster's
gangs do not yet.

  cluster compare --pollux ../shared/traces/pollux --load 1.0 --workload 6 --seeds 1-3

flags:
`)
		fs.PrintDefaults()
	}
	dir := fs.String("pollux", filepath.Join(tracesDir(), "..", "pollux"), "the Pollux data folder")
	loadText := fs.String("load", "1.0", "relative load: "+strings.Join(polluxLoads, ", "))
	workload := fs.Int("workload", 6, "which workload-N.csv of the load")
	pols := fs.String("policies", "tiresias,optimus,pollux", "policies to compare, comma-separated: "+strings.Join(policy.Names[pollux.Maker](), ", "))
	seedsText := fs.String("seeds", "1", "pollux's search seeds (7, 1-3 or 1,5): its column is the mean over them")
	out := fs.String("out", "", "folder for jobs-<policy>.csv (pollux: jobs-pollux-seed-K.csv) and summary.txt")
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
	if *workload < 1 {
		return fmt.Errorf("--workload: %d is not a workload number", *workload)
	}
	policies := strings.Split(*pols, ",")
	for i, p := range policies {
		policies[i] = strings.TrimSpace(p)
		if _, err := pollux.NewPolicy(policies[i]); err != nil {
			return fmt.Errorf("--policies: %w", err)
		}
	}
	seeds, err := parseSeeds(*seedsText)
	if err != nil {
		return err
	}
	model, err := loadPolluxModel(*dir)
	if err != nil {
		return err
	}
	file := filepath.Join(pollux.LoadFolder(*dir, load), fmt.Sprintf("workload-%d.csv", *workload))
	specs, err := pollux.ReadWorkload(file)
	if err != nil {
		return fmt.Errorf("--workload: %w", err)
	}
	type run struct {
		policy string
		seed   int64
		res    *pollux.Result
		wall   time.Duration
		err    error
	}
	var runs []*run
	for _, p := range policies {
		if p != "pollux" {
			runs = append(runs, &run{policy: p})
			continue
		}
		for _, s := range seeds {
			runs = append(runs, &run{policy: p, seed: s})
		}
	}
	fmt.Fprintf(os.Stderr, "pollux workload %d at load %s: %d runs, %d at a time (a Pollux run takes about a minute)\n",
		*workload, loadName, len(runs), runtime.GOMAXPROCS(0))
	inParallel(len(runs), runtime.GOMAXPROCS(0), func(i int) {
		r := runs[i]
		p, _ := pollux.NewSeededPolicy(r.policy, uint64(r.seed))
		start := time.Now()
		r.res, r.err = pollux.Run(model, specs, pollux.Reference, p)
		r.wall = time.Since(start)
	})
	var cols []sim.Column
	for _, r := range runs {
		if r.err != nil {
			return fmt.Errorf("%s: %w", r.policy, r.err)
		}
		sum := polluxSummary(r.policy, r.seed, r.res, pollux.Reference, r.wall)
		if n := len(cols); n > 0 && cols[n-1].Policy == r.policy {
			cols[n-1].Runs = append(cols[n-1].Runs, sum)
		} else {
			cols = append(cols, sim.Column{Policy: r.policy, Runs: []sim.Summary{sum}})
		}
		if *out != "" {
			name := "jobs-" + r.policy + ".csv"
			if r.policy == "pollux" {
				name = fmt.Sprintf("jobs-pollux-seed-%d.csv", r.seed)
			}
			if err := os.MkdirAll(*out, 0o755); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			if err := writeFile(filepath.Join(*out, name), func(w *os.File) error {
				fmt.Fprintln(w, "name,application,submit_s,jct_s,queued_s,restarts,preemptions,gpu_seconds,restart_gpu_seconds")
				for _, j := range r.res.Jobs {
					fmt.Fprintf(w, "%s,%s,%d,%d,%d,%d,%d,%d,%d\n", j.Name, j.App, j.Submit, j.JCT(), j.FirstAlloc-j.Submit,
						max(j.Restarts, 0), j.Preemptions, j.Service, j.RestartGPUSeconds)
				}
				return nil
			}); err != nil {
				return err
			}
		}
	}
	var table strings.Builder
	if err := sim.WriteColumns(&table, cols); err != nil {
		return err
	}
	fmt.Print(table.String())
	if *out != "" {
		if err := os.WriteFile(filepath.Join(*out, "summary.txt"), []byte(table.String()), 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		fmt.Fprintf(os.Stderr, "wrote %s: jobs-<policy>.csv, summary.txt\n", *out)
	}
	return nil
}

// polluxSummary is a Pollux-model run in the terms of cluster compare's
// table: every job is one priority ("all"); a GPU given to a job is busy
// (the model has no utilisation within a GPU), so utilisation is the
// GPU-seconds given over the cluster's over the run; lost work is the
// GPU-seconds of restart delays. What the model does not have is NaN.
func polluxSummary(policy string, seed int64, res *pollux.Result, c pollux.Cluster, wall time.Duration) sim.Summary {
	s := sim.Summary{Policy: policy, Seed: uint64(max(seed, 0)), Submitted: len(res.Jobs), Length: time.Duration(res.End) * time.Second, Wall: wall,
		ByPriority: map[string]*sim.Delays{"all": {}}, EnergyKWh: math.NaN(), FragMean: math.NaN(), FragMax: math.NaN(),
		VRAMFragMean: math.NaN(), VRAMFragMax: math.NaN(), SlowdownMean: math.NaN(), SlowdownP95: math.NaN()}
	d := s.ByPriority["all"]
	busy, lost := 0, 0
	for _, j := range res.Jobs {
		if j.Done {
			s.Completed++
			d.JCT = append(d.JCT, float64(j.JCT()))
		} else {
			s.Unended++
		}
		if j.FirstAlloc >= 0 {
			d.Queue = append(d.Queue, float64(j.FirstAlloc-j.Submit))
		}
		s.Preemptions += j.Preemptions
		busy += j.Service
		lost += j.RestartGPUSeconds
	}
	gpus := float64(c.Nodes * c.GPUsPerNode)
	if res.End > 0 {
		s.UtilMean = 100 * float64(busy) / (gpus * float64(res.End))
		s.GPUsIdle = gpus - float64(busy)/float64(res.End)
	}
	s.BusyGPUHours = float64(busy) / 3600
	s.LostGPUHours = float64(lost) / 3600
	return s
}
