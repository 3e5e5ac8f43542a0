package gavel

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gpusched/gpusched/model"
)

// Worker types, in the order Gavel sorts them (alphabetical), which is
// also the order it numbers its workers in (§3: k80 get the lowest ids).
const (
	K80 = iota
	P100
	V100
	numTypes
)

// TypeNames are Gavel's worker type names, indexed by K80, P100, V100.
var TypeNames = [numTypes]string{"k80", "p100", "v100"}

// TypeModels are the catalog models Gavel's worker types are (the
// artifact's cloud instances: AWS p3 V100-SXM2-16GB, GCP P100 16GB, one GPU
// of an AWS p2 K80 board).
var TypeModels = [numTypes]string{"K80-12GB", "P100-16GB", "V100-16GB"}

// scales are the scale factors a job may have (§2); scaleIndex maps one
// to its position.
var scales = [4]int{1, 2, 4, 8}

// scaleIndex is the position of scale factor sf in scales.
func scaleIndex(sf int) int {
	switch sf {
	case 1:
		return 0
	case 2:
		return 1
	case 4:
		return 2
	default:
		return 3
	}
}

// Template is one of the job table's 26 job types (§1).
type Template struct {
	// Name is the job type as the throughput table spells it
	// ("ResNet-18 (batch size 16)", "A3C").
	Name string
	// Distributed reports whether the type may run on more than one GPU.
	Distributed bool
}

// Data is a Gavel data folder read: the job table in generation order and
// the throughput table, with the rates the simulator reads laid out by
// index.
type Data struct {
	// Templates are the job types in the generator's order (§1).
	Templates []Template
	// Table is the throughput table (simulation_throughputs.json).
	Table *model.ThroughputTable
	// alone[w][t][s] is template t's steps/s alone on type w at scales[s]
	// (0: it cannot run there).
	alone [numTypes][][4]float64
	// packed[w][a][b][s] is templates a and b's steps/s packed on type w
	// at scales[s] ([0, 0]: they do not share).
	packed [numTypes][][][4][2]float64
}

// Load reads a Gavel data folder laid out like ../shared/traces/gavel:
// data/job_types.csv and data/simulation_throughputs.json.
func Load(dir string) (*Data, error) {
	templates, err := readTemplates(filepath.Join(dir, "data", "job_types.csv"))
	if err != nil {
		return nil, err
	}
	table, err := model.LoadThroughputs(filepath.Join(dir, "data", "simulation_throughputs.json"))
	if err != nil {
		return nil, err
	}
	return NewData(templates, table)
}

// NewData lays out table's rates for templates; every template must have
// a rate alone at scale factor 1 on every worker type.
func NewData(templates []Template, table *model.ThroughputTable) (*Data, error) {
	d := &Data{Templates: templates, Table: table}
	for w := range numTypes {
		d.alone[w] = make([][4]float64, len(templates))
		d.packed[w] = make([][][4][2]float64, len(templates))
		for a, ta := range templates {
			d.packed[w][a] = make([][4][2]float64, len(templates))
			for s, sf := range scales {
				rate, ok := table.Alone(TypeModels[w], ta.Name, sf)
				if !ok && sf == 1 {
					return nil, fmt.Errorf("throughput table: no rate alone for %s on %s (%s)", model.JobKey(ta.Name, 1), TypeNames[w], TypeModels[w])
				}
				d.alone[w][a][s] = rate
				for b, tb := range templates {
					if rates, ok := table.Packed(TypeModels[w], ta.Name, tb.Name, sf); ok {
						d.packed[w][a][b][s] = rates
					}
				}
			}
		}
	}
	return d, nil
}

// readTemplates reads job_types.csv: index, model, distributed, … in
// generation order.
func readTemplates(path string) ([]Template, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("job types: %w", err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("job types %s: %w", path, err)
	}
	if len(rows) < 2 || len(rows[0]) < 3 || rows[0][1] != "model" || rows[0][2] != "distributed" {
		return nil, fmt.Errorf("job types %s: want a header index,model,distributed,… and one row per job type", path)
	}
	var out []Template
	for i, row := range rows[1:] {
		idx, err := strconv.Atoi(row[0])
		if err != nil || idx != i {
			return nil, fmt.Errorf("job types %s line %d: index %q, want %d (the rows are the generator's order)", path, i+2, row[0], i)
		}
		out = append(out, Template{Name: row[1], Distributed: row[2] == "1"})
	}
	return out, nil
}
