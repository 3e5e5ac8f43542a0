package report

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"

	"github.com/gpusched/gpusched/pal"
)

// KindPAL is an output folder of `cluster replay --pal --out`
// (NAME.jobs.csv, NAME.summary.json, profile-seed-S.csv).
const KindPAL Kind = "pal"

// KindPALSweep is an output folder of `cluster compare --pal --out`
// (sweep.csv over the locality penalty).
const KindPALSweep Kind = "pal-sweep"

// palFiles are the PAL replay per-job CSVs in dir.
func palFiles(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.jobs.csv"))
	return files
}

// palReport draws a cluster replay --pal folder: the JCT CDF of each run,
// the reference run of the same configuration dashed beneath when
// opt.PAL holds one, and a heat map per class of each profile file.
func palReport(in, out string, files []string, opt Options, w *Written) error {
	var refs []pal.Reference
	if opt.PAL != "" {
		refs, _ = pal.ReadConfigs(opt.PAL)
	}
	jct := cdfPlot("JCT per run (the artifact's run of the same configuration dashed beneath)")
	for i, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jobs.csv")
		jcts, err := palJCTs(f)
		if err != nil {
			return err
		}
		if ref := palReferenceOf(refs, strings.TrimSuffix(f, ".jobs.csv")+".summary.json"); ref != nil {
			if theirs, err := palJCTs(filepath.Join(opt.PAL, "runs", ref.Name+".jobs.csv")); err == nil {
				if err := addUnderLine(jct, i, cdfOf(theirs, 1.0/3600)); err != nil {
					return err
				}
			}
		}
		if err := addLine(jct, i, name, cdfOf(jcts, 1.0/3600), false); err != nil {
			return err
		}
		if err := copyFile(f, filepath.Join(out, filepath.Base(f)), opt, w); err != nil {
			return err
		}
		if rounds := strings.TrimSuffix(f, ".jobs.csv") + ".rounds.jsonl"; fileExists(rounds) {
			if err := palOccupancy(rounds, filepath.Join(out, name+"-gpus.png"), name, opt, w); err != nil {
				return err
			}
		}
	}
	headroom(jct, len(files))
	if err := w.save(jct, opt, filepath.Join(out, "jct-cdf.png")); err != nil {
		return err
	}
	profiles, _ := filepath.Glob(filepath.Join(in, "profile-seed-*.csv"))
	for _, f := range profiles {
		if err := palHeatMaps(f, out, opt, w); err != nil {
			return err
		}
	}
	return nil
}

// palJCTs reads a per-job CSV's jct_s column.
func palJCTs(path string) ([]float64, error) {
	var out []float64
	err := readFile(path, func(r io.Reader) error {
		rows, err := csv.NewReader(r).ReadAll()
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return fmt.Errorf("empty")
		}
		col := slices.Index(rows[0], "jct_s")
		if col < 0 {
			return fmt.Errorf("no jct_s column")
		}
		for n, row := range rows[1:] {
			v, err := strconv.ParseFloat(row[col], 64)
			if err != nil {
				return fmt.Errorf("line %d: jct_s %q is not a number", n+2, row[col])
			}
			out = append(out, v)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// palReferenceOf is the reference run with the configuration a run's
// summary file states (nil when none, or no summary).
func palReferenceOf(refs []pal.Reference, summary string) *pal.Reference {
	s, err := pal.ReadSummary(summary)
	if err != nil || len(refs) == 0 {
		return nil
	}
	var n int
	if _, err := fmt.Sscanf(s.Trace, "workload-%d", &n); err != nil {
		return nil
	}
	c := pal.Defaults()
	c.Placement, _ = pal.PlacementName(s.Placement)
	c.Queue, _ = pal.QueueName(s.Scheduler)
	c.Locality, c.ProfileSeed, c.WorkloadSeed = s.Locality, s.ProfileSeed, s.WorkSeed
	c.TrackStart, c.TrackEnd = s.Tracked[0], s.Tracked[1]
	return pal.FindReference(refs, n, c)
}

// gpuGrid is a profile class's multipliers as a grid: x the node, y the
// GPU's index in it.
type gpuGrid struct {
	values  []float64
	perNode int
}

func (g gpuGrid) Dims() (c, r int)   { return (len(g.values) + g.perNode - 1) / g.perNode, g.perNode }
func (g gpuGrid) X(c int) float64    { return float64(c) }
func (g gpuGrid) Y(r int) float64    { return float64(r) }
func (g gpuGrid) Z(c, r int) float64 { return g.values[c*g.perNode+r] }

// palHeatMaps draws one heat map per class of a profile file: each GPU's
// multiplier (its iteration time over the median GPU's), nodes across,
// the GPUs of a node up, each cell labelled with its performance level
// (0 the fastest).
func palHeatMaps(path, out string, opt Options, w *Written) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) < 2 {
		return fmt.Errorf("%s: not a profile file (%v)", path, err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	nodes := map[string]bool{}
	for _, r := range rows[1:] {
		nodes[r[col["Node_ID"]]] = true
	}
	perNode := (len(rows) - 1) / max(len(nodes), 1)
	seed := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "profile-seed-"), ".csv")
	for _, class := range pal.Classes {
		vi, vok := col["PerfVar_"+class]
		li, lok := col["level_"+class]
		if !vok || !lok {
			return fmt.Errorf("%s: no PerfVar_%s or level_%s column", path, class, class)
		}
		g := gpuGrid{perNode: perNode}
		var labels plotter.XYLabels
		for n, r := range rows[1:] {
			v, err := strconv.ParseFloat(r[vi], 64)
			if err != nil {
				return fmt.Errorf("%s: line %d: PerfVar_%s %q is not a number", path, n+2, class, r[vi])
			}
			g.values = append(g.values, v)
			labels.XYs = append(labels.XYs, plotter.XY{X: float64(n / perNode), Y: float64(n % perNode)})
			labels.Labels = append(labels.Labels, "L"+r[li])
		}
		lo, hi := slices.Min(g.values), slices.Max(g.values)
		top := hi
		if top <= lo { // every GPU alike: the colour map needs a range
			top = lo + 1e-6
		}
		pal := moreland.SmoothBlueRed()
		pal.SetMax(top)
		pal.SetMin(lo)
		hm := plotter.NewHeatMap(g, pal.Palette(64))
		p := newPlot(fmt.Sprintf("Profile seed %s, %s: iteration-time multiplier per GPU (%.3f blue – %.3f red), L = performance level", seed, class, lo, hi),
			"node", "GPU in the node")
		p.Add(hm)
		if l, err := plotter.NewLabels(labels); err == nil {
			p.Add(l)
		}
		if err := w.save(p, opt, filepath.Join(out, fmt.Sprintf("profile-seed-%s-%s.png", seed, class))); err != nil {
			return err
		}
	}
	return copyFile(path, filepath.Join(out, filepath.Base(path)), opt, w)
}

// palSweep draws the geometric mean of each policy's normalised average
// JCT against the locality penalty, and copies sweep.csv.
func palSweep(in, out string, rows [][]string, opt Options, w *Written) error {
	return sweepPlot(in, out, rows, sweepAxes{x: "locality_penalty", y: "geomean_avg_jct_normalised", yScale: 1,
		title: "Average JCT over Packed-Sticky (Default-Packed-NS), geometric mean over the workloads", xLabel: "locality penalty",
		yLabel: "normalised average JCT", png: "jct-by-locality.png"}, opt, w)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// roundGrid is a run's GPUs round by round: x the round, y the GPU, the
// value which job holds it (its id mod the palette's colours, from 1;
// 0 free).
type roundGrid struct {
	t      []float64
	gpus   int
	holder [][]float64 // [round][gpu]
}

func (g roundGrid) Dims() (c, r int)   { return len(g.t), g.gpus }
func (g roundGrid) X(c int) float64    { return g.t[c] / 3600 }
func (g roundGrid) Y(r int) float64    { return float64(r) }
func (g roundGrid) Z(c, r int) float64 { return g.holder[c][r] }

// jobColours is the occupancy chart's palette: free first, then a colour
// per job (ids cycle through them).
type jobColours []color.Color

func (p jobColours) Colors() []color.Color { return p }

// palOccupancy draws which job holds each GPU in each round of a run
// (its rounds.jsonl): a GPU by time chart, one colour per job (cycling
// through eight), grey where the GPU is free — where each job's GPUs
// were, and how a gang moves from round to round.
func palOccupancy(path, png, name string, opt Options, w *Written) error {
	rounds, err := pal.ReadRounds(path)
	if err != nil {
		return err
	}
	if len(rounds) < 2 {
		return nil
	}
	g := roundGrid{}
	for _, r := range rounds {
		for _, gpus := range r.Alloc {
			for _, x := range gpus {
				g.gpus = max(g.gpus, x+1)
			}
		}
	}
	if g.gpus == 0 {
		return nil
	}
	colours := jobColours{color.Gray{Y: 225}}
	colours = append(colours, palette...)
	for _, r := range rounds {
		row := make([]float64, g.gpus)
		for id, gpus := range r.Alloc {
			for _, x := range gpus {
				row[x] = float64(1 + id%(len(colours)-1))
			}
		}
		g.t = append(g.t, r.T)
		g.holder = append(g.holder, row)
	}
	hm := plotter.NewHeatMap(g, colours)
	hm.Min, hm.Max = 0, float64(len(colours)-1)
	p := newPlot(name+": which job holds each GPU, round by round (a colour per job, cycling; grey free)", "time (hours)", "GPU")
	p.Add(hm)
	return w.save(p, opt, png)
}
