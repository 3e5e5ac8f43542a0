package pal

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Classes are the application classes a GPU's variability is measured
// for (§1): A ResNet-50, B and C BERT (drawn independently from the same
// measurements), D PageRank.
var Classes = [NumClasses]string{"classA", "classB", "classC", "classD"}

// NumClasses is how many application classes there are.
const NumClasses = 4

// Model is one model of the workload (§2): its application class (an
// index into Classes) and its nominal time per iteration in seconds.
type Model struct {
	Class    int
	IterTime float64
}

// Data is what the artifact's simulation reads: the model table and, per
// class, the pool of normalised measurements each GPU's multiplier is
// drawn from (perf / median perf of the class's file, in the file's row
// order, which the seeded draws depend on).
type Data struct {
	Dir    string
	Models map[string]Model
	Pools  [NumClasses][]float64
}

// LoadData reads the data folder of the artifact's copy (dir holds
// MODEL.md and data/).
func LoadData(dir string) (*Data, error) {
	d := &Data{Dir: dir, Models: map[string]Model{}}
	rows, err := readCSV(filepath.Join(dir, "data", "models.csv"), "model", "perfclass", "iter_time_s")
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		class := classIndex(r.get("perfclass"))
		if class < 0 {
			return nil, r.errorf("perfclass", "%q is not one of %s", r.get("perfclass"), strings.Join(Classes[:], ", "))
		}
		it, err := r.positive("iter_time_s")
		if err != nil {
			return nil, err
		}
		d.Models[r.get("model")] = Model{Class: class, IterTime: it}
	}
	for c, name := range Classes {
		rows, err := readCSV(filepath.Join(dir, "data", "perf_pool_"+name+".csv"), "perf_norm")
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			v, err := r.positive("perf_norm")
			if err != nil {
				return nil, err
			}
			d.Pools[c] = append(d.Pools[c], v)
		}
		if len(d.Pools[c]) == 0 {
			return nil, fmt.Errorf("%s: no measurements", filepath.Join(dir, "data", "perf_pool_"+name+".csv"))
		}
	}
	return d, nil
}

// classIndex is the index of a class name in Classes, or −1.
func classIndex(name string) int {
	for i, c := range Classes {
		if c == name {
			return i
		}
	}
	return -1
}

// TraceJob is one row of a Sia-Philly trace (§2). Duration is the trace's
// duration column, which the artifact uses as a number of iterations.
type TraceJob struct {
	ID       int
	GPUs     int
	Submit   float64
	Duration float64
	Model    string
}

// TracePath is where workload n's trace is in the data folder dir.
func TracePath(dir string, n int) string {
	return filepath.Join(dir, "data", "traces", fmt.Sprintf("workload-%d.csv", n))
}

// ReadTrace reads a trace file (job_id,num_gpus,submit_time,duration,
// model), checking that its ids are 0, 1, 2… in order, its submit times
// never go back, and every model is in models.
func ReadTrace(path string, models map[string]Model) ([]TraceJob, error) {
	rows, err := readCSV(path, "job_id", "num_gpus", "submit_time", "duration", "model")
	if err != nil {
		return nil, err
	}
	out := make([]TraceJob, 0, len(rows))
	for i, r := range rows {
		id, err := r.integer("job_id")
		if err != nil {
			return nil, err
		}
		if id != i {
			return nil, r.errorf("job_id", "%d where %d was expected (ids count from 0 in order)", id, i)
		}
		gpus, err := r.integer("num_gpus")
		if err != nil {
			return nil, err
		}
		if gpus < 1 {
			return nil, r.errorf("num_gpus", "%d: a job needs at least one GPU", gpus)
		}
		submit, err := r.number("submit_time")
		if err != nil {
			return nil, err
		}
		if submit < 0 || (i > 0 && submit < out[i-1].Submit) {
			return nil, r.errorf("submit_time", "%v: submit times start at 0 and never go back", submit)
		}
		dur, err := r.positive("duration")
		if err != nil {
			return nil, err
		}
		m := r.get("model")
		if _, ok := models[m]; !ok {
			return nil, r.errorf("model", "%q is not in models.csv", m)
		}
		out = append(out, TraceJob{ID: id, GPUs: gpus, Submit: submit, Duration: dur, Model: m})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no jobs", path)
	}
	return out, nil
}

// row is one CSV record with its header, for errors naming the file,
// line and column.
type row struct {
	path   string
	line   int
	fields map[string]string
}

func (r row) get(col string) string { return r.fields[col] }

func (r row) errorf(col, format string, args ...any) error {
	return fmt.Errorf("%s line %d, column %s: %s", r.path, r.line, col, fmt.Sprintf(format, args...))
}

func (r row) number(col string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(r.get(col)), 64)
	if err != nil {
		return 0, r.errorf(col, "%q is not a number", r.get(col))
	}
	return v, nil
}

func (r row) positive(col string) (float64, error) {
	v, err := r.number(col)
	if err == nil && !(v > 0) {
		err = r.errorf(col, "%v is not above 0", v)
	}
	return v, err
}

// integer reads a whole number, also written as a float ("64.0").
func (r row) integer(col string) (int, error) {
	v, err := r.number(col)
	if err == nil && (v != float64(int(v))) {
		err = r.errorf(col, "%v is not a whole number", v)
	}
	return int(v), err
}

// readCSV reads a CSV file with a header holding at least cols; lines
// starting with # are comments.
func readCSV(path string, cols ...string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty, a header was expected", path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	index := map[string]int{}
	for i, h := range header {
		index[strings.TrimSpace(h)] = i
	}
	for _, c := range cols {
		if _, ok := index[c]; !ok {
			return nil, fmt.Errorf("%s: no column %q (the header has %s)", path, c, strings.Join(header, ","))
		}
	}
	var out []row
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := cr.FieldPos(0)
		fields := map[string]string{}
		for name, i := range index {
			if i < len(rec) {
				fields[name] = rec[i]
			}
		}
		out = append(out, row{path: path, line: line, fields: fields})
	}
}
