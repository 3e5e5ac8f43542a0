package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/pal"
	"github.com/gpusched/gpusched/sim"
)

// palRun is one run of `cluster replay --pal`: its workload and
// configuration and, once done, its result and the reference's JCTs.
type palRun struct {
	workload int
	cfg      pal.Config
	name     string
	res      *pal.Result
	took     time.Duration
	err      error
	ref      *pal.Reference
	refJCTs  map[int]float64
	refSum   pal.Summary
}

// palFlags are the flags `cluster replay --pal` and `cluster compare
// --pal` share: the data folder and one run's configuration.
type palFlags struct {
	dir, policy, queue, workload, locality, track string
	profileSeed, workloadSeed                     uint64
}

func (f *palFlags) register(fs *flag.FlagSet, policyDefault, workloadDefault string) {
	fs.StringVar(&f.dir, "pal", filepath.Join(tracesDir(), "..", "pal"), "the PAL data folder (data/, runs/, MODEL.md)")
	var names []string
	for _, p := range pal.Placements {
		names = append(names, p.Name)
	}
	fs.StringVar(&f.policy, "policy", policyDefault, "placement or comma-separated placements: "+strings.Join(names, ", ")+" (the artifact's names, PMFirst, Default-Packed-NS …, are understood too)")
	fs.StringVar(&f.queue, "queue", "fifo", "queue order or comma-separated orders: fifo, las (plain attained service, not Tiresias's two-dimensional LAS), srtf")
	fs.StringVar(&f.workload, "workload", workloadDefault, "workload number, range or list (1, 1-8, 1,8): DIR/data/traces/workload-N.csv")
	fs.StringVar(&f.locality, "locality", "1.7", "locality penalty on every step of a gang that spans nodes (≥ 1), or a comma-separated list")
	fs.Uint64Var(&f.profileSeed, "profile-seed", 42, "seed of the variability profile's draws (and of the Random placements)")
	fs.Uint64Var(&f.workloadSeed, "workload-seed", 1, "seed of the arrivals of the jobs generated after the trace's 160")
	fs.StringVar(&f.track, "track", "0-159", "the tracked job ids A-B (inclusive); the run ends when they have all completed")
}

// configs are the runs the flags name: each workload × placement ×
// queue × locality, in that order.
func (f *palFlags) configs() ([]int, []pal.Config, error) {
	workloads, err := parseSeeds(f.workload)
	if err != nil || len(workloads) == 0 {
		return nil, nil, fmt.Errorf("--workload: %q is not a workload number, range or list (1, 1-8, 1,8)", f.workload)
	}
	var track [2]int
	if a, b, ok := strings.Cut(f.track, "-"); !ok {
		return nil, nil, fmt.Errorf("--track: %q is not a range of job ids A-B (6-59)", f.track)
	} else if track[0], err = strconv.Atoi(strings.TrimSpace(a)); err != nil {
		return nil, nil, fmt.Errorf("--track: %q is not a range of job ids A-B (6-59)", f.track)
	} else if track[1], err = strconv.Atoi(strings.TrimSpace(b)); err != nil {
		return nil, nil, fmt.Errorf("--track: %q is not a range of job ids A-B (6-59)", f.track)
	}
	var localities []float64
	for _, s := range strings.Split(f.locality, ",") {
		l, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(l >= 1) || math.IsInf(l, 0) {
			return nil, nil, fmt.Errorf("--locality: %q is not a penalty of at least 1 (1 is none; the artifact's is 1.7)", s)
		}
		localities = append(localities, l)
	}
	var placements, queues []string
	for _, s := range strings.Split(f.policy, ",") {
		p, ok := pal.PlacementName(strings.TrimSpace(s))
		if !ok {
			return nil, nil, fmt.Errorf("--policy: %w", palUnknown("placement", s))
		}
		placements = append(placements, p)
	}
	for _, s := range strings.Split(f.queue, ",") {
		q, ok := pal.QueueName(strings.TrimSpace(s))
		if !ok {
			return nil, nil, fmt.Errorf("--queue: %w", palUnknown("queue", s))
		}
		queues = append(queues, q)
	}
	var ns []int
	var cfgs []pal.Config
	for _, w := range workloads {
		if w < 1 {
			return nil, nil, fmt.Errorf("--workload: %d is not a workload number (they count from 1)", w)
		}
		for _, p := range placements {
			for _, q := range queues {
				for _, l := range localities {
					c := pal.Defaults()
					c.Placement, c.Queue, c.Locality = p, q, l
					c.ProfileSeed, c.WorkloadSeed = f.profileSeed, f.workloadSeed
					c.TrackStart, c.TrackEnd = track[0], track[1]
					if err := c.Validate(); err != nil {
						return nil, nil, err
					}
					ns = append(ns, int(w))
					cfgs = append(cfgs, c)
				}
			}
		}
	}
	return ns, cfgs, nil
}

func palUnknown(what, s string) error {
	var names []string
	if what == "placement" {
		for _, p := range pal.Placements {
			names = append(names, p.Name)
		}
	} else {
		for _, q := range pal.Queues {
			names = append(names, q.Name)
		}
	}
	return fmt.Errorf("%q is not a PAL %s (%s)", strings.TrimSpace(s), what, strings.Join(names, ", "))
}

// palCommand is `cluster replay --pal DIR`: the PAL paper's Sia-Philly
// simulation — per-GPU variability, the slowest GPU of a gang, the
// locality penalty — each job's JCT beside the artifact's.
func palCommand(args []string) error {
	fs := flag.NewFlagSet("cluster replay --pal", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: cluster replay --pal DIR --policy P --queue Q --workload N [--locality L] [--profile-seed S] [--workload-seed W] [--track A-B] [--offline] [--out OUTDIR] [--compare]
       cluster replay --pal DIR --reference [--offline] [--out OUTDIR]

Runs the PAL paper's (SC'24) Sia-Philly simulation as DIR/MODEL.md
specifies it: 16 nodes of 4 GPUs, each GPU with its own measured pace per
application class (drawn from DIR/data/perf_pool_*.csv with CPython's
generator seeded --profile-seed), a gang paced by its slowest GPU and
slowed by --locality when it spans nodes, 360-second rounds with free
preemption. --policy is the placement (pm-first, pal, packed-sticky,
packed-nonsticky, random-sticky, random-nonsticky: the artifact's
Default-Packed-S keeps running jobs in place, Default-Packed-NS re-places
them every round and is what the paper's plots call "Packed-Sticky");
--queue the order (fifo, las, srtf; this LAS is plain attained service,
not the two-dimensional Tiresias LAS --queue las means in the live
scheduler). --policy, --queue, --workload and --locality take lists: one
run each. --reference runs every run of DIR/runs/configs.txt instead.

--out writes each run as it finishes: NAME.jobs.csv in the columns of
DIR/runs (job_id,submit_s,finish_s,jct_s,num_gpus,model,perfclass,
iter_time_s,total_iters,nominal_runtime_s,last_pm_penalty,
last_locality_penalty) and NAME.summary.json, NAME as the reference names
its runs (w1_fifo_PAL) with what differs from the artifact's defaults
appended (_lf2.5, _ps7, _ws3, _t6-59), NAME.rounds.jsonl (each round's
allocation as it found the cluster, in the reference's keys), and
profile-seed-S.csv, the
variability profile and its performance levels in the columns of
DIR/data/profile_seed42.csv. observer report draws the folder (JCT CDFs,
the reference's dashed beneath, and the profile's heat maps). --compare sets each run beside the
reference run of the same configuration in DIR/runs: how many JCTs are
equal (within 1e-6 s) and both summaries. Ctrl-C stops; the runs that
finished are kept and tabled.

Without --offline each run is live, on a virtual clock: an embedded NATS
server, 16 nodes of 4 V100 GPU actors each carrying its own multipliers,
every job submitted over the bus at its submit time (its model as
job_type, its iterations as steps, its class as perf_class), the
scheduler stepping PAL's rounds and enacting each round's placement on
the GPUs, which run each gang at its nominal pace ÷ its slowest GPU's
multiplier × the locality penalty across nodes. Its JCTs are the offline
run's, bit for bit (the scheduler's job events carry them). --offline
runs the pure model (package pal), faster.

  cluster replay --pal ../shared/traces/pal --reference
  cluster replay --pal ../shared/traces/pal --policy pal,pm-first --workload 8 --track 18-48 --compare
  cluster replay --pal ../shared/traces/pal --policy pal --workload 1-8 --locality 1,1.7,3 --offline --out pal-runs/

flags:
`)
		fs.PrintDefaults()
	}
	var f palFlags
	f.register(fs, "pal", "1")
	offline := fs.Bool("offline", false, "run on the pure model, without actors or bus (the same JCTs, faster)")
	out := fs.String("out", "", "folder for NAME.jobs.csv and NAME.summary.json of each run, written as it finishes")
	compare := fs.Bool("compare", false, "set each run beside the reference run of the same configuration in DIR/runs")
	reference := fs.Bool("reference", false, "run every run of DIR/runs/configs.txt, each compared (instead of --policy, --workload …)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags go before nothing else: cluster replay --pal DIR --policy pal …)", fs.Arg(0))
	}
	data, err := pal.LoadData(f.dir)
	if err != nil {
		return fmt.Errorf("--pal: %w (the PAL artifact's data: github.com/hal-uw/blox-pal, branch artifact; here in ../shared/traces/pal)", err)
	}
	var refs []pal.Reference
	if *compare || *reference {
		if refs, err = pal.ReadConfigs(f.dir); err != nil {
			return fmt.Errorf("--compare: %w", err)
		}
	}
	var runs []*palRun
	if *reference {
		for i := range refs {
			runs = append(runs, &palRun{workload: refs[i].Workload, cfg: refs[i].Config, name: refs[i].Name, ref: &refs[i]})
		}
		*compare = true
	} else {
		ns, cfgs, err := f.configs()
		if err != nil {
			return err
		}
		for i, c := range cfgs {
			r := &palRun{workload: ns[i], cfg: c, name: pal.RunName(ns[i], c)}
			if *compare {
				r.ref = pal.FindReference(refs, ns[i], c)
			}
			runs = append(runs, r)
		}
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	ctx, stop := interruptContext()
	defer stop()
	traces := map[int][]pal.TraceJob{}
	for i, r := range runs {
		if ctx.Err() != nil {
			break
		}
		trace, ok := traces[r.workload]
		if !ok {
			if trace, err = pal.ReadTrace(pal.TracePath(f.dir, r.workload), data.Models); err != nil {
				return fmt.Errorf("--workload %d: %w", r.workload, err)
			}
			traces[r.workload] = trace
		}
		start := time.Now()
		if *offline {
			r.res, r.err = pal.Run(ctx, data, trace, r.cfg)
		} else {
			var live *sim.PALRun
			if live, r.err = sim.RunPAL(ctx, data, trace, r.cfg, sim.PALOptions{}); r.err == nil {
				r.res = live.Result
				fmt.Fprintf(os.Stderr, "pal: %s live: %s simulated in %s\n", r.name, live.Run.Length.Round(time.Second), live.Run.Wall.Round(time.Millisecond))
			}
		}
		r.took = time.Since(start)
		if errors.Is(r.err, context.Canceled) {
			break
		}
		if r.err != nil {
			return fmt.Errorf("%s: %w", r.name, r.err)
		}
		if r.ref != nil {
			if r.refJCTs, err = pal.ReadJobs(filepath.Join(f.dir, "runs", r.ref.Name+".jobs.csv")); err != nil {
				return err
			}
			if r.refSum, err = pal.ReadSummary(filepath.Join(f.dir, "runs", r.ref.Name+".summary.json")); err != nil {
				return err
			}
		}
		if *out != "" {
			if err := writePALRun(*out, r); err != nil {
				return err
			}
			if err := writePALProfile(*out, data, r.cfg); err != nil {
				return err
			}
		}
		if len(runs) > 1 {
			fmt.Fprintf(os.Stderr, "pal: %s done in %s (%d of %d)\n", r.name, r.took.Round(time.Millisecond), i+1, len(runs))
		}
	}
	var finished []*palRun
	for _, r := range runs {
		if r.res != nil && r.err == nil {
			finished = append(finished, r)
		}
	}
	printPALTable(finished)
	if *out != "" && len(finished) > 0 {
		fmt.Fprintf(os.Stderr, "wrote %s: NAME.jobs.csv and NAME.summary.json for %d runs\n", *out, len(finished))
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %d of %d runs finished (kept above)", len(finished), len(runs))
	}
	return nil
}

// writePALRun writes a finished run's CSV and summary into dir.
func writePALRun(dir string, r *palRun) error {
	if err := writeFile(filepath.Join(dir, r.name+".jobs.csv"), func(f *os.File) error { return pal.WriteCSV(f, r.res) }); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, r.name+".rounds.jsonl"), func(f *os.File) error { return pal.WriteRounds(f, r.res.RoundStats) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, r.name+".summary.json"), func(f *os.File) error {
		enc := json.NewEncoder(f)
		enc.SetIndent("", " ")
		return enc.Encode(pal.NewSummary(r.name, r.workload, r.res, r.took.Seconds()))
	})
}

// writePALProfile writes the run's variability profile and levels as
// profile-seed-S.csv (once per seed: every run with the seed has it).
func writePALProfile(dir string, data *pal.Data, c pal.Config) error {
	path := filepath.Join(dir, fmt.Sprintf("profile-seed-%d.csv", c.ProfileSeed))
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	p := pal.ProfileOf(data, c)
	return writeFile(path, func(f *os.File) error { return pal.WriteProfile(f, p, pal.NewLevels(p), c.PerMachine) })
}

// palEqual counts r's JCTs equal to the reference's (within 1e-6 s) and
// returns the first tracked job that differs (−1: none).
func palEqual(r *palRun) (equal, firstDiffer int) {
	firstDiffer = -1
	for _, j := range r.res.Jobs {
		if w, ok := r.refJCTs[j.ID]; ok && math.Abs(w-j.JCT) <= 1e-6 {
			equal++
		} else if firstDiffer < 0 {
			firstDiffer = j.ID
		}
	}
	return equal, firstDiffer
}

// printPALTable prints one line per finished run: its figures and, with
// a reference, the reference's beside them and how many JCTs are equal.
func printPALTable(runs []*palRun) {
	if len(runs) == 0 {
		return
	}
	width := len("run")
	compared := false
	for _, r := range runs {
		width = max(width, len(r.name))
		compared = compared || r.ref != nil
	}
	fmt.Printf("%-*s %5s %13s %13s %13s %12s %9s", width, "run", "jobs", "avg JCT (s)", "p99 JCT (s)", "makespan (s)", "utilisation", "wall")
	if compared {
		fmt.Printf("  %-11s %15s %12s %10s", "equal JCTs", "reference avg", "ref. util.", "ref. wall")
	}
	fmt.Println()
	totalEqual, totalJobs, refRuns := 0, 0, 0
	for _, r := range runs {
		res := r.res
		fmt.Printf("%-*s %5d %13.3f %13.0f %13.0f %12.6f %9s", width, r.name, len(res.Jobs), res.AvgJCT, res.P99JCT, res.Makespan, res.Utilisation, r.took.Round(time.Microsecond))
		if r.ref != nil {
			equal, first := palEqual(r)
			totalEqual += equal
			totalJobs += len(r.refJCTs)
			refRuns++
			fmt.Printf("  %-11s %15.3f %12.6f %9.1fs", fmt.Sprintf("%d/%d", equal, len(r.refJCTs)), r.refSum.AvgJCT, r.refSum.Utilisation, r.refSum.Wall)
			if first >= 0 {
				fmt.Printf("  first differing job: %d", first)
			}
		} else if compared {
			fmt.Printf("  %-11s", "no reference run")
		}
		fmt.Println()
	}
	if refRuns > 0 {
		fmt.Printf("\n%d of %d jobs' JCTs equal the reference's (|Δ| ≤ 1e-6 s) over %d runs\n", totalEqual, totalJobs, refRuns)
	}
}
