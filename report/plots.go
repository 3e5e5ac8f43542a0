package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/gpusched/gpusched/replay"
	"github.com/gpusched/gpusched/sim"
)

// Plot size: a 16:10 figure, readable on a screen and in a document.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 5 * vg.Inch
)

// palette tells up to eight policies apart (Okabe–Ito, readable by
// colour-blind readers).
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255}, color.RGBA{230, 159, 0, 255}, color.RGBA{0, 158, 115, 255},
	color.RGBA{213, 94, 0, 255}, color.RGBA{204, 121, 167, 255}, color.RGBA{86, 180, 233, 255},
	color.RGBA{240, 228, 66, 255}, color.RGBA{0, 0, 0, 255},
}

func secondsDuration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// priorities lists the priorities in the usual order, then any others.
func priorities(sums []sim.Summary) []string { return sim.Priorities(sums) }

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.X.Tick.Marker, p.Y.Tick.Marker = niceTicks{}, niceTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// cdfPlot is a plot of distributions (CDFs): they rise to the top right,
// so the legend goes bottom right, where no curve is.
func cdfPlot(title string) *plot.Plot {
	p := newPlot(title, "JCT (hours)", "fraction of completed jobs")
	p.Legend.Top = false
	return p
}

// niceTicks marks an axis about every eighth of its range at round
// values (1, 2 or 5 times a power of ten), labelled; gonum's default
// gives three or four, too few to read a JCT off.
type niceTicks struct{}

// niceTicksWanted is the number of labelled ticks aimed at.
const niceTicksWanted = 8

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / niceTicksWanted
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	// As many decimals as the step has (a step of 0.2 labels 0.6, not
	// 3 × 0.2 = 0.6000000000000001).
	decimals := max(0, -int(math.Floor(math.Log10(step))))
	var out []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step/1e9; v += step {
		x := math.Round(v/step) * step
		rounded, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', decimals, 64), 64)
		out = append(out, plot.Tick{Value: x, Label: strconv.FormatFloat(rounded, 'f', -1, 64)})
	}
	return out
}

func (w *Written) save(p *plot.Plot, opt Options, path string) error {
	if err := p.Save(plotWidth, plotHeight, path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	w.Files = append(w.Files, path)
	if opt.Log != nil {
		fmt.Fprintln(opt.Log, "wrote", path)
	}
	return nil
}

func addLine(p *plot.Plot, i int, name string, xys plotter.XYs, dashed bool) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = palette[i%len(palette)]
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(l)
	if name != "" {
		p.Legend.Add(name, l)
	}
	return nil
}

// addUnderLine draws a published curve: wide, pale and dashed, under the
// line drawn after it.
func addUnderLine(p *plot.Plot, i int, xys plotter.XYs) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	r, g, b, _ := palette[i%len(palette)].RGBA()
	// The policy's colour at 35 % opacity (RGBA returns 16-bit channels).
	l.Color = color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 90}
	l.Width = vg.Points(5)
	l.Dashes = []vg.Length{vg.Points(8), vg.Points(4)}
	p.Add(l)
	return nil
}

// sameCurve reports whether two curves coincide at every x they share,
// to within 0.05 percentage points (what a plot can show).
func sameCurve(a, b plotter.XYs) bool {
	at := map[float64]float64{}
	for _, p := range b {
		at[p.X] = p.Y
	}
	shared := 0
	for _, p := range a {
		if y, ok := at[p.X]; ok {
			shared++
			if math.Abs(y-p.Y) > 0.05 {
				return false
			}
		}
	}
	return shared > 0
}

// headroom raises the top of the y axis so the legend (top right) sits
// above the lines rather than on them.
func headroom(p *plot.Plot, entries int) {
	// Each legend entry takes about 4% of the figure's height.
	p.Y.Max += (p.Y.Max - p.Y.Min) * min(0.6, 0.06*float64(entries+1))
}

// firstPerPolicy keeps one run per policy (its first seed), so that the
// lines over time stay readable.
func firstPerPolicy(runs []run) []run {
	var out []run
	seen := map[string]bool{}
	for _, r := range runs {
		if !seen[r.result.Policy] {
			seen[r.result.Policy] = true
			out = append(out, r)
		}
	}
	return out
}

// timePlots draws the measures over time (one line per run), the JCT
// distribution by priority, and for a comparison the JCT percentiles of
// each policy side by side.
func timePlots(out string, runs []run, sums []sim.Summary, opt Options, w *Written) error {
	shown := firstPerPolicy(runs)
	note := ""
	if len(shown) < len(runs) {
		note = " (first seed of each policy)"
	}
	for _, m := range []struct {
		file, title, y string
		value          func(s *sim.Sample) float64
	}{
		{"utilisation.png", "Mean GPU utilisation", "utilisation (%)", func(s *sim.Sample) float64 { return s.UtilMean }},
		{"allocation.png", "GPU share allocated", "allocated (% of GPUs)", func(s *sim.Sample) float64 { return 100 * s.Allocation }},
		{"fragmentation.png", "Cluster fragmentation F(M) (FGD)", "fragmented (GPUs)", func(s *sim.Sample) float64 { return s.FragAmount }},
		{"vram-fragmentation.png", "VRAM fragmentation: free VRAM outside each GPU's largest block", "fragmented (% of free VRAM)", func(s *sim.Sample) float64 { return 100 * s.VRAMFragmentation }},
		{"queue.png", "Queue length", "jobs queued", func(s *sim.Sample) float64 { return float64(s.JobsQueued) }},
	} {
		p := newPlot(m.title+note, "simulated time (hours)", m.y)
		for i, r := range shown {
			xys := make(plotter.XYs, len(r.result.Series))
			for k := range r.result.Series {
				s := &r.result.Series[k]
				xys[k] = plotter.XY{X: s.T / 3600, Y: m.value(s)}
			}
			if err := addLine(p, i, r.result.Policy, xys, false); err != nil {
				return err
			}
		}
		headroom(p, len(shown))
		if err := w.save(p, opt, filepath.Join(out, m.file)); err != nil {
			return err
		}
	}
	prios := priorities(sums)
	if len(shown) == 1 {
		// One run: the JCT distribution (CDF) of each priority.
		p := cdfPlot("Job completion time by priority")
		for i, pr := range prios {
			if err := addLine(p, i, pr, cdf(sums[0].ByPriority[pr]), false); err != nil {
				return err
			}
		}
		return w.save(p, opt, filepath.Join(out, "jct.png"))
	}
	for _, pr := range prios {
		p := cdfPlot("Job completion time, " + pr + " priority" + note)
		for i, r := range shown {
			k := slices.IndexFunc(runs, func(x run) bool { return x.name == r.name })
			if err := addLine(p, i, r.result.Policy, cdf(sums[k].ByPriority[pr]), false); err != nil {
				return err
			}
		}
		if err := w.save(p, opt, filepath.Join(out, "jct-"+pr+".png")); err != nil {
			return err
		}
	}
	return policyBars(out, sums, prios, opt, w)
}

// cdf is the empirical distribution of a priority's JCTs, in hours.
func cdf(d *sim.Delays) plotter.XYs {
	if d == nil {
		return nil
	}
	return cdfOf(d.JCT, 1.0/3600)
}

// policyBars draws, per percentile, the JCT of each priority (groups) for
// each policy (bars side by side), the mean over a policy's seeds.
func policyBars(out string, sums []sim.Summary, prios []string, opt Options, w *Written) error {
	var policies []string
	for _, s := range sums {
		if !slices.Contains(policies, s.Policy) {
			policies = append(policies, s.Policy)
		}
	}
	for _, pct := range []float64{50, 95} {
		p := newPlot(fmt.Sprintf("JCT p%.0f by priority, policies side by side", pct), "priority", "JCT (hours)")
		p.NominalX(prios...)
		// A group (one priority) is about 160 points wide in this figure: its
		// bars share 120 of them, leaving a gap between groups.
		barWidth := vg.Points(min(40, 120/float64(len(policies))))
		for i, pol := range policies {
			vals := make(plotter.Values, len(prios))
			for k, pr := range prios {
				var sum float64
				n := 0
				for _, s := range sums {
					if s.Policy == pol && s.ByPriority[pr] != nil && len(s.ByPriority[pr].JCT) > 0 {
						sum += sim.Percentile(s.ByPriority[pr].JCT, pct) / 3600
						n++
					}
				}
				if n > 0 {
					vals[k] = sum / float64(n)
				}
			}
			b, err := plotter.NewBarChart(vals, barWidth)
			if err != nil {
				return err
			}
			b.Color = palette[i%len(palette)]
			b.LineStyle.Width = 0
			b.Offset = barWidth * vg.Length(float64(i)-float64(len(policies)-1)/2)
			p.Add(b)
			p.Legend.Add(pol, b)
		}
		headroom(p, len(policies))
		if err := w.save(p, opt, filepath.Join(out, fmt.Sprintf("jct-p%.0f-by-policy.png", pct))); err != nil {
			return err
		}
	}
	return nil
}

// curvePlots draws, per workload, each policy's allocation and
// fragmentation curves (the mean over its seeds) against arrived workload,
// with the published curve of the same policy dashed beside it.
func curvePlots(out string, curves map[string]map[string]map[int64][]replay.Point, pub replay.Published, opt Options, w *Written) error {
	var workloads []string
	for wl := range curves {
		workloads = append(workloads, wl)
	}
	sort.Strings(workloads)
	for _, wl := range workloads {
		var policies []string
		for pol := range curves[wl] {
			policies = append(policies, pol)
		}
		sort.Slice(policies, func(a, b int) bool { return paperOrder(policies[a]) < paperOrder(policies[b]) })
		for _, m := range []struct {
			file, title, y string
			value          func(p replay.Point) float64
		}{
			{"alloc-" + wl + ".png", "Allocated GPUs, " + wl + " workload", "allocated (% of GPU capacity)", func(p replay.Point) float64 { return p.Alloc }},
			{"frag-" + wl + ".png", "Fragmented GPUs F(M), " + wl + " workload", "fragmented (% of GPU capacity)", func(p replay.Point) float64 { return p.Frag }},
			{"frag-ratio-" + wl + ".png", "Fragmentation ratio, " + wl + " workload", "fragmented (% of idle GPU share)", func(p replay.Point) float64 { return p.FragRatio }},
		} {
			title := m.title
			if pub != nil {
				title += " (dashed: published)"
			}
			p := newPlot(title, "arrived workload (% of GPU capacity)", m.y)
			coincide, compared := true, false
			for i, pol := range policies {
				// Ours and the published, each the mean over the same seeds.
				var ours, published [][]replay.Point
				for seed, pts := range curves[wl][pol] {
					ours = append(ours, pts)
					if pp, ok := pub[replay.RunKey{Workload: wl, Policy: pol, Seed: seed}]; ok {
						published = append(published, pp)
					}
				}
				mine := curveXYs(replay.MeanCurve(ours), m.value)
				if len(published) > 0 {
					// The published curve goes under ours, wider and paler,
					// so it shows around ours when they coincide.
					theirs := curveXYs(replay.MeanCurve(published), m.value)
					if err := addUnderLine(p, i, theirs); err != nil {
						return err
					}
					compared = true
					coincide = coincide && sameCurve(mine, theirs)
				}
				if err := addLine(p, i, pol, mine, false); err != nil {
					return err
				}
			}
			if compared && coincide {
				p.Title.Text += " — ours lies on the published curves"
			}
			headroom(p, len(policies))
			if err := w.save(p, opt, filepath.Join(out, m.file)); err != nil {
				return err
			}
		}
	}
	return nil
}

func paperOrder(policy string) int {
	for i, pp := range replay.PaperPolicies {
		if pp.Name == policy {
			return i
		}
	}
	return len(replay.PaperPolicies)
}

func curveXYs(pts []replay.Point, value func(replay.Point) float64) plotter.XYs {
	var out plotter.XYs
	for _, p := range pts {
		if p.Events == 0 && p.Alloc == 0 && p.Frag == 0 {
			continue // no data at this point
		}
		out = append(out, plotter.XY{X: float64(p.Arrived), Y: value(p)})
	}
	return out
}
