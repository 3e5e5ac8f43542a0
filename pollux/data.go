package pollux

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Apps are the applications of the published workloads with the constants
// MODEL.md §3.1 gives: the epochs a job runs, and the largest local batch
// (yolov3's is overridden to 8 although its traces go to 16).
var Apps = map[string]struct{ MaxEpochs, MaxLocalOverride int }{
	"bert": {2, 0}, "cifar10": {100, 0}, "deepspeech2": {80, 0}, "imagenet": {90, 0}, "ncf": {10, 0}, "yolov3": {50, 8},
}

// App is one application's model: its measured throughput and its
// training curve at several global batch sizes.
type App struct {
	Name string
	// B0 and Bmax are the smallest and largest validation batch sizes;
	// MinLocal and MaxLocal the local batch sizes the placements cover.
	B0, Bmax           int
	MinLocal, MaxLocal int
	MaxEpochs          int
	valid              []validation
	// bounds[e] is P(e), the progress at the end of epoch e−1 (§3.2).
	bounds []float64
	// placements are the Path-A rows by normalised placement id, sorted
	// by local batch size.
	placements map[string][]stepRow
	// pathB are the Path-B values (MODEL.md Appendix B) by (nodes clipped
	// at 16, replicas, local batch).
	pathB map[[3]int][2]float64
	// points are the measurements a Path-B query outside Appendix B is
	// interpolated from (pathb.go).
	points pathBPoints
}

type validation struct {
	b                                     int
	progress, iteration, gradSqr, gradVar []float64
}

type stepRow struct {
	local          int
	step, syncTime float64
}

// Model is the applications of a Pollux data folder.
type Model struct {
	Apps map[string]*App
	// Dir is the folder it was read from.
	Dir string
}

// Load reads the model from a folder laid out like the Pollux artifact's
// (traces/<app>/placements.csv and validation-<B>.csv; MODEL.md, whose
// Appendix B gives the step times of placements on five or more nodes).
func Load(dir string) (*Model, error) {
	m := &Model{Apps: map[string]*App{}, Dir: dir}
	pathB, err := readAppendixB(filepath.Join(dir, "MODEL.md"))
	if err != nil {
		return nil, err
	}
	for name, c := range Apps {
		a, err := loadApp(filepath.Join(dir, "traces", name), name, c.MaxEpochs, c.MaxLocalOverride)
		if err != nil {
			return nil, err
		}
		a.pathB = pathB[name]
		m.Apps[name] = a
	}
	return m, nil
}

func loadApp(dir, name string, maxEpochs, maxLocal int) (*App, error) {
	a := &App{Name: name, MaxEpochs: maxEpochs, placements: map[string][]stepRow{}}
	rows, err := readCSV(filepath.Join(dir, "placements.csv"), "placement", "local_bsz", "step_time", "sync_time")
	if err != nil {
		return nil, err
	}
	sums := map[[3]int]*[3]float64{}
	for _, r := range rows {
		local, err1 := strconv.Atoi(r[1])
		step, err2 := strconv.ParseFloat(r[2], 64)
		syncT, err3 := strconv.ParseFloat(r[3], 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("%s/placements.csv: %w", dir, err)
		}
		a.placements[r[0]] = append(a.placements[r[0]], stepRow{local, step, syncT})
		// An id is the per-node replica counts written one digit each.
		replicas := 0
		for _, d := range r[0] {
			replicas += int(d - '0')
		}
		addPoint(sums, len(r[0]), replicas, stepRow{local, step, syncT})
		if a.MinLocal == 0 || local < a.MinLocal {
			a.MinLocal = local
		}
		a.MaxLocal = max(a.MaxLocal, local)
	}
	if maxLocal > 0 {
		a.MaxLocal = maxLocal
	}
	scaling, err := readCSV(filepath.Join(dir, "scalability.csv"), "num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time")
	if err != nil {
		return nil, err
	}
	for _, r := range scaling {
		var k [3]int
		var errs []error
		for i := range k {
			var err error
			k[i], err = strconv.Atoi(r[i])
			errs = append(errs, err)
		}
		step, err1 := strconv.ParseFloat(r[3], 64)
		syncT, err2 := strconv.ParseFloat(r[4], 64)
		if err := errors.Join(append(errs, err1, err2)...); err != nil {
			return nil, fmt.Errorf("%s/scalability.csv: %w", dir, err)
		}
		addPoint(sums, k[0], k[1], stepRow{k[2], step, syncT})
	}
	a.points = buildPathB(sums)
	for id, rs := range a.placements {
		slices.SortStableFunc(rs, func(x, y stepRow) int { return x.local - y.local })
		a.placements[id] = rs
	}
	files, err := filepath.Glob(filepath.Join(dir, "validation-*.csv"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("%s: no validation-<B>.csv files", dir)
	}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".csv")
		b, err := strconv.Atoi(base[strings.LastIndex(base, "-")+1:])
		if err != nil {
			return nil, fmt.Errorf("%s: the batch size after the last '-': %w", f, err)
		}
		rows, err := readCSV(f, "progress", "iteration", "metric", "grad_sqr", "grad_var")
		if err != nil {
			return nil, err
		}
		v := validation{b: b}
		for _, r := range rows {
			var x [5]float64
			for i := range x {
				if x[i], err = strconv.ParseFloat(r[i], 64); err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
			}
			v.progress, v.iteration = append(v.progress, x[0]), append(v.iteration, x[1])
			v.gradSqr, v.gradVar = append(v.gradSqr, x[3]), append(v.gradVar, x[4])
		}
		if len(v.progress) < maxEpochs {
			return nil, fmt.Errorf("%s: %d epochs, the application runs %d", f, len(v.progress), maxEpochs)
		}
		a.valid = append(a.valid, v)
	}
	slices.SortFunc(a.valid, func(x, y validation) int { return x.b - y.b })
	a.B0, a.Bmax = a.valid[0].b, a.valid[len(a.valid)-1].b
	// P(e) = the least progress at the end of epoch e−1 over every file.
	a.bounds = make([]float64, maxEpochs+1)
	for e := 1; e <= maxEpochs; e++ {
		p := a.valid[0].progress[e-1]
		for _, v := range a.valid[1:] {
			p = min(p, v.progress[e-1])
		}
		a.bounds[e] = p
	}
	return a, nil
}

// readCSV reads a CSV file whose header must be exactly columns.
func readCSV(path string, columns ...string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !slices.Equal(head, columns) {
		return nil, fmt.Errorf("%s: columns %v, want %v", path, head, columns)
	}
	var out [][]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, rec)
	}
}

// readAppendixB reads the Path-B table from MODEL.md's Appendix B: the
// exact step and sync time of every query of five or more nodes the
// published configurations can make (§3.4: the interpolation they come
// from depends on a triangulation library's choices).
func readAppendixB(path string) (map[string]map[[3]int][2]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the Path-B table (MODEL.md, Appendix B): %w", err)
	}
	text := string(b)
	at := strings.Index(text, "## Appendix B")
	if at < 0 {
		return nil, fmt.Errorf("%s: no \"## Appendix B\" section", path)
	}
	text = text[at:]
	start := strings.Index(text, "```")
	if start < 0 {
		return nil, fmt.Errorf("%s: Appendix B has no table", path)
	}
	text = text[start+3:]
	text = text[:max(0, strings.Index(text, "```"))]
	out := map[string]map[[3]int][2]float64{}
	for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) != 6 {
			return nil, fmt.Errorf("%s: Appendix B line %d: %q, want app num_nodes num_replicas local_bsz step_time sync_time", path, i+1, line)
		}
		var k [3]int
		var errs []error
		for j := range k {
			k[j], err = strconv.Atoi(f[1+j])
			errs = append(errs, err)
		}
		step, err1 := strconv.ParseFloat(f[4], 64)
		syncT, err2 := strconv.ParseFloat(f[5], 64)
		if err := errors.Join(append(errs, err1, err2)...); err != nil {
			return nil, fmt.Errorf("%s: Appendix B line %d: %w", path, i+1, err)
		}
		if out[f[0]] == nil {
			out[f[0]] = map[[3]int][2]float64{}
		}
		out[f[0]][k] = [2]float64{step, syncT}
	}
	return out, nil
}
