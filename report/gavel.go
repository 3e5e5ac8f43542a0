package report

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"gonum.org/v1/plot/plotter"
)

// KindGavel is an output folder of `cluster compare --gavel`
// (gavel-<policy>-<seed>.csv).
const KindGavel Kind = "gavel"

// gavelName matches gavel-<policy>-<seed>.csv.
var gavelName = regexp.MustCompile(`^gavel-(.+)-(\d+)\.csv$`)

// gavelJobs are one policy's measured jobs over its seeds: JCTs in
// seconds and finish-time fairness ρ (JCT over Isolated's).
type gavelJobs struct {
	policy    string
	jct, rhos []float64
}

// gavelReport draws a cluster compare --gavel folder: the JCT CDF and the
// ρ CDF of each policy, its seeds' jobs pooled, and copies its summary.
func gavelReport(in, out string, files []string, opt Options, w *Written) error {
	var pols []*gavelJobs
	for _, f := range files {
		m := gavelName.FindStringSubmatch(filepath.Base(f))
		if m == nil {
			continue
		}
		k := slices.IndexFunc(pols, func(p *gavelJobs) bool { return p.policy == m[1] })
		if k < 0 {
			pols = append(pols, &gavelJobs{policy: m[1]})
			k = len(pols) - 1
		}
		if err := readFile(f, func(r io.Reader) error { return readGavelJobs(r, pols[k]) }); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	if len(pols) == 0 {
		return fmt.Errorf("%s: no gavel-<policy>-<seed>.csv", in)
	}
	if err := copyFile(filepath.Join(in, "summary.txt"), filepath.Join(out, "summary.txt"), opt, w); err != nil {
		return err
	}
	jct := cdfPlot("JCT of the measured jobs, per policy")
	rho := newPlot("Finish-time fairness ρ (JCT over Isolated's), per policy", "ρ", "fraction of measured jobs")
	rho.Legend.Top = false
	for i, p := range pols {
		if err := addLine(jct, i, p.policy, cdfOf(p.jct, 1.0/3600), false); err != nil {
			return err
		}
		if err := addLine(rho, i, p.policy, cdfOf(p.rhos, 1), false); err != nil {
			return err
		}
	}
	headroom(jct, len(pols))
	if err := w.save(jct, opt, filepath.Join(out, "jct-cdf.png")); err != nil {
		return err
	}
	return w.save(rho, opt, filepath.Join(out, "rho-cdf.png"))
}

// readGavelJobs reads one gavel-<policy>-<seed>.csv into p.
func readGavelJobs(r io.Reader, p *gavelJobs) error {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("empty: want the header job_id,submit_s,jct_s,job_type,scale_factor,rho")
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	jc, ok1 := col["jct_s"]
	rc, ok2 := col["rho"]
	if !ok1 || !ok2 {
		return fmt.Errorf("header %v lacks jct_s or rho", rows[0])
	}
	for n, row := range rows[1:] {
		x, err := strconv.ParseFloat(row[jc], 64)
		if err != nil {
			return fmt.Errorf("line %d, jct_s: %q is not a number", n+2, row[jc])
		}
		p.jct = append(p.jct, x)
		if row[rc] == "" {
			continue // no Isolated baseline for it
		}
		rho, err := strconv.ParseFloat(row[rc], 64)
		if err != nil {
			return fmt.Errorf("line %d, rho: %q is not a number", n+2, row[rc])
		}
		p.rhos = append(p.rhos, rho)
	}
	return nil
}

// cdfOf is the empirical CDF of xs, each scaled by scale.
func cdfOf(xs []float64, scale float64) plotter.XYs {
	s := slices.Clone(xs)
	slices.Sort(s)
	out := make(plotter.XYs, len(s))
	for i, x := range s {
		out[i] = plotter.XY{X: x * scale, Y: float64(i+1) / float64(len(s))}
	}
	return out
}

// KindGavelSweep is an output folder of `cluster compare --gavel` over
// several rates (sweep.csv).
const KindGavelSweep Kind = "gavel-sweep"

// gavelSweep draws a sweep's mean JCT against the input rate, a line per
// policy (the paper's Figure 8), and copies sweep.csv.
func gavelSweep(in, out string, rows [][]string, opt Options, w *Written) error {
	return sweepPlot(in, out, rows, sweepAxes{x: "jobs_per_hour", y: "jct_mean_s", yScale: 1.0 / 3600,
		title: "Average JCT of the measured jobs by input rate", xLabel: "input rate (jobs/hour)", yLabel: "average JCT (hours)",
		png: "jct-by-rate.png"}, opt, w)
}

// sweepAxes are what a sweep.csv plot draws: the x and y columns (y
// times yScale), its labels and its file.
type sweepAxes struct {
	x, y                  string
	yScale                float64
	title, xLabel, yLabel string
	png                   string
}

// sweepPlot draws a sweep.csv (a header, then rows of a policy and the
// two columns a names), a line per policy in the rows' order, and
// copies the file.
func sweepPlot(in, out string, rows [][]string, a sweepAxes, opt Options, w *Written) error {
	path := filepath.Join(in, "sweep.csv")
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, need := range []string{a.x, "policy", a.y} {
		if _, ok := col[need]; !ok {
			return fmt.Errorf("%s: the header lacks %s", path, need)
		}
	}
	var order []string
	lines := map[string]plotter.XYs{}
	for n, row := range rows[1:] {
		x, err1 := strconv.ParseFloat(row[col[a.x]], 64)
		y, err2 := strconv.ParseFloat(row[col[a.y]], 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%s: line %d: %s and %s must be numbers", path, n+2, a.x, a.y)
		}
		p := row[col["policy"]]
		if _, ok := lines[p]; !ok {
			order = append(order, p)
		}
		lines[p] = append(lines[p], plotter.XY{X: x, Y: y * a.yScale})
	}
	pl := newPlot(a.title, a.xLabel, a.yLabel)
	for i, p := range order {
		xys := lines[p]
		slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		if err := addLine(pl, i, p, xys, false); err != nil {
			return err
		}
	}
	headroom(pl, len(order))
	if err := copyFile(path, filepath.Join(out, "sweep.csv"), opt, w); err != nil {
		return err
	}
	return w.save(pl, opt, filepath.Join(out, a.png))
}
