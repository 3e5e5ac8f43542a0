package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpusched/gpusched/report"
)

const reportUsage = `usage: observer report RUN --out DIR [--published DIR]

RUN is a recording (observer record --out run.jsonl), or the output folder
of cluster compare (jobs-<policy>.csv, series-<policy>.csv), of cluster
compare --gavel (gavel-<policy>-<seed>.csv: JCT and finish-time fairness ρ
CDFs per policy), of cluster replay --pollux (workload-N_<policy>_<load>.csv:
the JCT CDF and each workload's average JCT, the published ones dashed
beneath), of cluster replay --pal (NAME.jobs.csv: the JCT CDF of each run,
the artifact's run dashed beneath, which job held each GPU round by round,
and a heat map per class of the variability profile with each GPU's
performance level), of cluster compare
--pal (sweep.csv: the normalised average JCT by locality penalty) or of
cluster replay (<workload>_<policy>_<seed>.csv).
DIR gets summary.txt, summary.json, the per-job CSV and PNG plots.

  --pollux DIR      the Pollux data folder (results-jobload), drawn beside a
                    Pollux replay's; by default $GPUSCHED_TRACES/pollux or
                    ../shared/traces/pollux
  --pal DIR         the PAL data folder (runs/), whose reference runs are
                    drawn beside a PAL replay's; by default
                    $GPUSCHED_TRACES/pal or ../shared/traces/pal
  --published DIR   the FGD paper's results (fgd-expected-results), drawn
                    dashed beside a replay's curves; by default looked for
                    in $GPUSCHED_TRACES and ../shared/traces/alibaba-openb
`

// publishedDir finds the FGD paper's published results beside the project.
func publishedDir() string {
	var dirs []string
	if d := os.Getenv("GPUSCHED_TRACES"); d != "" {
		// $GPUSCHED_TRACES is the traces folder (alibaba-openb and pollux
		// in it), as for every command and test.
		dirs = append(dirs, filepath.Join(d, "alibaba-openb", "fgd-expected-results"))
	}
	dirs = append(dirs, filepath.Join("..", "shared", "traces", "alibaba-openb", "fgd-expected-results"))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "analysis_allo_discrete.csv")); err == nil {
			return d
		}
	}
	return ""
}

// polluxDataDir finds the Pollux data folder beside the project, as
// publishedDir finds the FGD paper's results ("" when absent).
func polluxDataDir() string { return dataDir("pollux", "results-jobload") }

// palDataDir finds the PAL data folder beside the project ("" when
// absent).
func palDataDir() string { return dataDir("pal", "runs") }

// dataDir is the traces folder's sub (in $GPUSCHED_TRACES, or
// ../shared/traces) when it holds marker, or "".
func dataDir(sub, marker string) string {
	var dirs []string
	if d := os.Getenv("GPUSCHED_TRACES"); d != "" {
		dirs = append(dirs, filepath.Join(d, sub))
	}
	dirs = append(dirs, filepath.Join("..", "shared", "traces", sub))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, marker)); err == nil {
			return d
		}
	}
	return ""
}

func reportCommand(args []string) int {
	fs := flag.NewFlagSet("observer report", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, reportUsage) }
	out := fs.String("out", "", "folder to write the report into")
	published := fs.String("published", "", "the FGD paper's results folder (fgd-expected-results)")
	polluxDir := fs.String("pollux", "", "the Pollux data folder, whose published JCTs are drawn beside a --pollux replay's")
	palDir := fs.String("pal", "", "the PAL data folder, whose reference runs are drawn beside a --pal replay's")
	// The run may come before or after the flags.
	var inputs []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		inputs = append(inputs, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(inputs) != 1 || *out == "" {
		fmt.Fprint(os.Stderr, "observer report: give one RUN and --out DIR\n\n"+reportUsage)
		return 2
	}
	if err := checkReportDir(*out); err != nil {
		fmt.Fprintln(os.Stderr, "observer report:", err)
		return 2
	}
	pub := *published
	if pub == "" {
		pub = publishedDir()
	}
	px := *polluxDir
	if px == "" {
		px = polluxDataDir()
	}
	pd := *palDir
	if pd == "" {
		pd = palDataDir()
	}
	w, err := report.Make(inputs[0], *out, report.Options{Published: pub, Pollux: px, PAL: pd, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "observer report:", err)
		return 1
	}
	if w.Kind == report.KindReplay && pub == "" {
		fmt.Fprintln(os.Stderr, "observer report: the published FGD results were not found (give --published DIR); the curves are drawn alone")
	}
	fmt.Fprintf(os.Stderr, "observer report: %s, %d files in %s\n", w.Kind, len(w.Files), *out)
	return 0
}

// checkReportDir refuses an --out folder that holds Go source files (such
// as the project's own report package, for `--out report/` run from the
// source tree): a report's files would mix with them.
func checkReportDir(dir string) error {
	gos, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	if len(gos) > 0 {
		return fmt.Errorf("--out %s holds Go source files (%s): choose another folder, e.g. run-report/", dir, filepath.Base(gos[0]))
	}
	return nil
}
