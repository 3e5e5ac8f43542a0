package replay

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// PaperPolicies maps the published results' policy labels to ours, in the
// paper's order.
var PaperPolicies = []struct{ Label, Name string }{
	{"01-Random", "random"}, {"02-DotProd", "dotprod"}, {"03-GpuClustering", "gpu-clustering"},
	{"04-GpuPacking", "gpu-packing"}, {"05-BestFit", "best-fit"}, {"06-FGD", "fgd"},
}

// RunKey names one published run.
type RunKey struct {
	Workload string
	Policy   string // our policy name
	Seed     int64
}

// Published is the FGD authors' cached results: per run, the curve.
type Published map[RunKey][]Point

// Published result files in the fgd-expected-results folder.
const (
	allocFile     = "analysis_allo_discrete.csv"
	fragFile      = "analysis_frag_discrete.csv"
	fragRatioFile = "analysis_frag_ratio_discrete.csv"
)

// ReadPublished reads the three analysis_*_discrete.csv files of dir.
func ReadPublished(dir string) (Published, error) {
	out := Published{}
	for _, f := range []struct {
		name string
		set  func(p *Point, v float64)
	}{
		{allocFile, func(p *Point, v float64) { p.Alloc = v }},
		{fragFile, func(p *Point, v float64) { p.Frag = v }},
		{fragRatioFile, func(p *Point, v float64) { p.FragRatio = v }},
	} {
		path := filepath.Join(dir, f.name)
		fh, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("published results: %w (give the fgd-expected-results folder)", err)
		}
		rows, err := csv.NewReader(fh).ReadAll()
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(rows) < 2 {
			return nil, fmt.Errorf("%s: no rows", path)
		}
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		first, ok := col["0"]
		if !ok {
			return nil, fmt.Errorf("%s: no column \"0\"", path)
		}
		for li, row := range rows[1:] {
			name := ""
			for _, pp := range PaperPolicies {
				if pp.Label == row[col["sc_policy"]] {
					name = pp.Name
				}
			}
			if name == "" || row[col["tune"]] != "1.3" {
				continue
			}
			seed, err := strconv.ParseInt(row[col["seed"]], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: seed: %v", path, li+2, err)
			}
			key := RunKey{Workload: row[col["workload"]], Policy: name, Seed: seed}
			pts := out[key]
			if pts == nil {
				pts = make([]Point, MaxArrived+1)
				for k := range pts {
					pts[k].Arrived = k
				}
				out[key] = pts
			}
			for k := 0; k <= MaxArrived && first+k < len(row); k++ {
				v, err := strconv.ParseFloat(row[first+k], 64)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: column %d: %v", path, li+2, k, err)
				}
				f.set(&pts[k], v)
			}
		}
	}
	return out, nil
}
