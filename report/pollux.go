package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"gonum.org/v1/plot/plotter"

	"github.com/gpusched/gpusched/pollux"
	"github.com/gpusched/gpusched/sim"
)

// KindPollux is an output folder of `cluster replay --pollux`
// (workload-N_<policy>_<load>[_seed-K].csv).
const KindPollux Kind = "pollux"

// polluxName matches workload-N_<policy>_<load>.csv and its per-seed form.
var polluxName = regexp.MustCompile(`^(workload-\d+)_([a-z]+)_(\d\.\d)(?:_seed-(\d+))?\.csv$`)

// polluxFiles are the Pollux replay CSVs in dir.
func polluxFiles(dir string) []string { return filesNamed(dir, "workload-*_*_*.csv", polluxName) }

// polluxRun is one policy and load's jobs over the folder's workloads
// and seeds: JCTs pooled, and each workload's mean JCT over its seeds.
type polluxRun struct {
	policy, load string
	jcts         []float64
	byWorkload   map[string][]float64 // workload → each seed's average JCT
}

// polluxReport draws a cluster replay --pollux folder: the JCT CDF of
// each policy and load, the published one (DIR/results-jobload, when
// opt.Pollux finds it) dashed beneath, and each workload's average JCT
// against the published.
func polluxReport(in, out string, files []string, opt Options, w *Written) error {
	var runs []*polluxRun
	for _, f := range files {
		m := polluxName.FindStringSubmatch(filepath.Base(f))
		k := slices.IndexFunc(runs, func(r *polluxRun) bool { return r.policy == m[2] && r.load == m[3] })
		if k < 0 {
			runs = append(runs, &polluxRun{policy: m[2], load: m[3], byWorkload: map[string][]float64{}})
			k = len(runs) - 1
		}
		var jcts []float64
		if err := readFile(f, func(r io.Reader) (err error) { jcts, err = readPolluxJCTs(r); return }); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		runs[k].jcts = append(runs[k].jcts, jcts...)
		runs[k].byWorkload[m[1]] = append(runs[k].byWorkload[m[1]], sim.Mean(jcts))
		if err := copyFile(f, filepath.Join(out, filepath.Base(f)), opt, w); err != nil {
			return err
		}
	}
	jct := cdfPlot("JCT per policy (published dashed beneath)")
	avg := newPlot("Average JCT per workload (published dashed)", "workload", "average JCT (hours)")
	for i, r := range runs {
		name := r.policy + " " + r.load
		var pub *pollux.Published
		if opt.Pollux != "" {
			load, _ := strconv.ParseFloat(r.load, 64)
			pub, _ = pollux.ReadPublished(opt.Pollux, r.policy, load)
		}
		if pub != nil {
			var all []float64
			for _, wl := range slices.Sorted(maps.Keys(pub.JCTs)) {
				for _, v := range pub.JCTs[wl] {
					all = append(all, float64(v))
				}
			}
			if err := addUnderLine(jct, i, cdfOf(all, 1.0/3600)); err != nil {
				return err
			}
		}
		if err := addLine(jct, i, name, cdfOf(r.jcts, 1.0/3600), false); err != nil {
			return err
		}
		var ours, theirs plotter.XYs
		for _, wl := range slices.SortedFunc(maps.Keys(r.byWorkload), func(a, b string) int { return pollux.WorkloadNumber(a) - pollux.WorkloadNumber(b) }) {
			n := pollux.WorkloadNumber(wl)
			ours = append(ours, plotter.XY{X: float64(n), Y: sim.Mean(r.byWorkload[wl]) / 3600})
			if pub != nil {
				if a, ok := pub.Avgs[wl]; ok {
					theirs = append(theirs, plotter.XY{X: float64(n), Y: a / 3600})
				}
			}
		}
		if err := addUnderLine(avg, i, theirs); err != nil {
			return err
		}
		if err := addLine(avg, i, name, ours, false); err != nil {
			return err
		}
	}
	headroom(jct, len(runs))
	headroom(avg, len(runs))
	if err := w.save(jct, opt, filepath.Join(out, "jct-cdf.png")); err != nil {
		return err
	}
	return w.save(avg, opt, filepath.Join(out, "avg-jct-by-workload.png"))
}

// readPolluxJCTs reads a replay CSV's jct_s column.
func readPolluxJCTs(r io.Reader) ([]float64, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || !slices.Contains(rows[0], "jct_s") {
		return nil, fmt.Errorf("want the header name,submit_s,jct_s,restarts")
	}
	c := slices.Index(rows[0], "jct_s")
	var out []float64
	for n, row := range rows[1:] {
		x, err := strconv.ParseFloat(row[c], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d, jct_s: %q is not a number", n+2, row[c])
		}
		out = append(out, x)
	}
	return out, nil
}
