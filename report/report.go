package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/replay"
	"github.com/gpusched/gpusched/sim"
)

// Options tune a report.
type Options struct {
	// Published is the FGD paper's results folder (fgd-expected-results),
	// drawn beside an FGD replay's curves when set.
	Published string
	// Pollux is the Pollux data folder (its results-jobload), whose
	// published JCTs are drawn beside a Pollux replay's.
	Pollux string
	// PAL is the PAL data folder (its runs/), whose reference runs are
	// drawn beside a PAL replay's.
	PAL string
	// Log, when set, gets one line per file written.
	Log io.Writer
}

// Kind is what a report was made from.
type Kind string

// The inputs a report understands.
const (
	KindRecording Kind = "recording"
	KindCompare   Kind = "compare"
	KindReplay    Kind = "replay"
)

// Written lists what a report wrote.
type Written struct {
	Kind  Kind
	Files []string
}

// Make writes the report of in (a file of recorded events, or a compare or
// replay output folder) into the folder out.
func Make(in, out string, opt Options) (*Written, error) {
	st, err := os.Stat(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	w := &Written{}
	if !st.IsDir() {
		w.Kind = KindRecording
		return w, recording(in, out, opt, w)
	}
	if _, err := os.Stat(filepath.Join(in, "sweep.csv")); err == nil {
		path := filepath.Join(in, "sweep.csv")
		var rows [][]string
		if err := readFile(path, func(r io.Reader) (err error) { rows, err = csv.NewReader(r).ReadAll(); return }); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(rows) < 2 {
			return nil, fmt.Errorf("%s: no rows under the header", path)
		}
		if slices.Contains(rows[0], "locality_penalty") {
			w.Kind = KindPALSweep
			return w, palSweep(in, out, rows, opt, w)
		}
		w.Kind = KindGavelSweep
		return w, gavelSweep(in, out, rows, opt, w)
	}
	if files, _ := filepath.Glob(filepath.Join(in, "gavel-*.csv")); len(files) > 0 {
		w.Kind = KindGavel
		return w, gavelReport(in, out, files, opt, w)
	}
	if jobs, _ := filepath.Glob(filepath.Join(in, "jobs-*.csv")); len(jobs) > 0 {
		w.Kind = KindCompare
		return w, compare(in, out, jobs, opt, w)
	}
	if files := palFiles(in); len(files) > 0 {
		w.Kind = KindPAL
		return w, palReport(in, out, files, opt, w)
	}
	if files := polluxFiles(in); len(files) > 0 {
		w.Kind = KindPollux
		return w, polluxReport(in, out, files, opt, w)
	}
	if curves := replayFiles(in); len(curves) > 0 {
		w.Kind = KindReplay
		return w, replayCurves(in, out, curves, opt, w)
	}
	return nil, fmt.Errorf("%s: neither a recording nor an output folder of cluster compare (jobs-<policy>.csv, or gavel-<policy>-<seed>.csv with --gavel) or cluster replay (with --pollux: workload-N_<policy>_<load>.csv; with --pal: NAME.jobs.csv) (<workload>_<policy>_<seed>.csv)", in)
}

func (w *Written) write(opt Options, path string, fill func(f *os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	w.Files = append(w.Files, path)
	if opt.Log != nil {
		fmt.Fprintln(opt.Log, "wrote", path)
	}
	return nil
}

// run is one run's result with the name it goes by in the plots.
type run struct {
	name   string
	result *sim.Result
}

func recording(in, out string, opt Options, w *Written) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := sim.ReadEvents(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if n := len(res.Series); n > 0 {
		// The cluster's counters run from its start; the recording may
		// begin later, so the run's energy and preemptions are what they
		// grew by while it was recorded.
		res.Final = res.Series[n-1].Metrics
		res.Final.EnergyKWh -= res.Series[0].EnergyKWh
		res.Final.Preemptions -= res.Series[0].Preemptions
	}
	if res.Policy == "" {
		res.Policy = "run"
	}
	if err := w.write(opt, filepath.Join(out, "jobs.csv"), func(f *os.File) error { return sim.WriteJobs(f, res.Jobs) }); err != nil {
		return err
	}
	if err := w.write(opt, filepath.Join(out, "series.csv"), func(f *os.File) error { return sim.WriteSeries(f, res.Series) }); err != nil {
		return err
	}
	sum := sim.Summarize(res)
	if err := summaries(out, "recorded from "+filepath.Base(in), []sim.Column{{Policy: res.Policy, Runs: []sim.Summary{sum}}}, opt, w); err != nil {
		return err
	}
	return timePlots(out, []run{{res.Policy, res}}, []sim.Summary{sum}, opt, w)
}

// seriesName matches jobs-<policy>.csv and jobs-<policy>-<seed>.csv.
var jobsName = regexp.MustCompile(`^jobs-(.+?)(?:-(\d+))?\.csv$`)

func compare(in, out string, jobFiles []string, opt Options, w *Written) error {
	var runs []run
	var sums []sim.Summary
	for _, jf := range jobFiles {
		m := jobsName.FindStringSubmatch(filepath.Base(jf))
		if m == nil {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(jf), "jobs-"), ".csv")
		res := &sim.Result{Policy: m[1]}
		if m[2] != "" {
			seed, _ := strconv.ParseUint(m[2], 10, 64)
			res.Seed = seed
		}
		if err := readFile(jf, func(r io.Reader) (err error) { res.Jobs, err = sim.ReadJobs(r); return }); err != nil {
			return err
		}
		sf := filepath.Join(in, "series-"+name+".csv")
		if err := readFile(sf, func(r io.Reader) (err error) { res.Series, err = sim.ReadSeries(r); return }); err != nil {
			return err
		}
		if n := len(res.Series); n > 0 {
			res.Final = res.Series[n-1].Metrics
			res.Length = secondsDuration(res.Series[n-1].T)
		}
		res.Submitted = len(res.Jobs)
		runs = append(runs, run{name, res})
		sums = append(sums, sim.Summarize(res))
		if err := copyFile(jf, filepath.Join(out, filepath.Base(jf)), opt, w); err != nil {
			return err
		}
	}
	// One column per policy, the mean over its seeds.
	var cols []sim.Column
	for i := range sums {
		if k := slices.IndexFunc(cols, func(c sim.Column) bool { return c.Policy == sums[i].Policy }); k >= 0 {
			cols[k].Runs = append(cols[k].Runs, sums[i])
		} else {
			cols = append(cols, sim.Column{Policy: sums[i].Policy, Runs: []sim.Summary{sums[i]}})
		}
	}
	if err := summaries(out, "cluster compare output "+in, cols, opt, w); err != nil {
		return err
	}
	return timePlots(out, runs, sums, opt, w)
}

func summaries(out, what string, cols []sim.Column, opt Options, w *Written) error {
	if err := w.write(opt, filepath.Join(out, "summary.txt"), func(f *os.File) error {
		fmt.Fprintf(f, "%s\n\n", what)
		return sim.WriteColumns(f, cols)
	}); err != nil {
		return err
	}
	return w.write(opt, filepath.Join(out, "summary.json"), func(f *os.File) error {
		var runs []sim.SummaryJSON
		for _, c := range cols {
			for i := range c.Runs {
				runs = append(runs, c.Runs[i].JSON())
			}
		}
		enc := json.NewEncoder(f)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"source": what, "runs": runs})
	})
}

func readFile(path string, read func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := read(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func copyFile(from, to string, opt Options, w *Written) error {
	if abs1, _ := filepath.Abs(from); abs1 == func() string { a, _ := filepath.Abs(to); return a }() {
		return nil
	}
	return w.write(opt, to, func(f *os.File) error {
		return readFile(from, func(r io.Reader) error { _, err := io.Copy(f, r); return err })
	})
}

// replayName matches <workload>_<policy>_<seed>.csv (a policy name has no
// underscore; a workload name may).
var replayName = regexp.MustCompile(`^(.+)_([^_]+)_(\d+)\.csv$`)

func replayFiles(dir string) []string { return filesNamed(dir, "*_*_*.csv", replayName) }

// filesNamed are the files of dir that glob finds and whose base name
// name matches, sorted.
func filesNamed(dir, glob string, name *regexp.Regexp) []string {
	all, _ := filepath.Glob(filepath.Join(dir, glob))
	var out []string
	for _, f := range all {
		if name.MatchString(filepath.Base(f)) {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

func replayCurves(in, out string, files []string, opt Options, w *Written) error {
	// workload → policy → its curve per seed
	curves := map[string]map[string]map[int64][]replay.Point{}
	for _, f := range files {
		m := replayName.FindStringSubmatch(filepath.Base(f))
		var pts []replay.Point
		if err := readFile(f, func(r io.Reader) (err error) { pts, err = replay.ReadCurve(r); return }); err != nil {
			return err
		}
		if curves[m[1]] == nil {
			curves[m[1]] = map[string]map[int64][]replay.Point{}
		}
		if curves[m[1]][m[2]] == nil {
			curves[m[1]][m[2]] = map[int64][]replay.Point{}
		}
		seed, _ := strconv.ParseInt(m[3], 10, 64)
		curves[m[1]][m[2]][seed] = pts
	}
	var pub replay.Published
	if opt.Published != "" {
		var err error
		if pub, err = replay.ReadPublished(opt.Published); err != nil {
			return err
		}
	}
	return curvePlots(out, curves, pub, opt, w)
}
