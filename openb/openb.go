// Package openb reads the Alibaba GPU cluster trace v2023 ("openb") as the
// FGD paper uses it: the node list (a cluster) and the pod lists (a
// workload). Readers check every line and return either everything or an
// error naming the file, line and column; nothing is half-loaded.
package openb

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/model"
)

// Node is one row of an openb node list.
type Node struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int
	// Model is the catalog name of the node's GPU model ("" without GPUs).
	Model string
}

// Pod is one row of an openb pod list.
type Pod struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int
	// Milli is the share of each GPU in thousandths (gpu_milli).
	Milli int
	// Spec is the gpu_spec column as written ("V100M16|V100M32"); Models
	// the catalog names it allows (empty: any).
	Spec   string
	Models []string
	QoS    string
	Phase  string
	// Creation, Deletion and Scheduled are seconds from the trace start;
	// HasTimes is false in the five-column files (multigpu*).
	Creation, Deletion, Scheduled int64
	HasTimes                      bool
}

// GPUMilli is the pod's whole GPU demand, k·g thousandths.
func (p *Pod) GPUMilli() int64 { return int64(p.GPUs) * int64(p.Milli) }

// LineError is a malformed line of a trace file.
type LineError struct {
	File   string
	Line   int
	Column string
	Err    error
}

// Error implements error.
func (e *LineError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: column %s: %v", e.File, e.Line, e.Column, e.Err)
}

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

var (
	nodeColumns = []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}
	podColumns  = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}
)

// table reads a CSV file whose header must start with the required columns
// (in order; the pod lists' later columns are optional as a block).
type table struct {
	file string
	r    *csv.Reader
	cols map[string]int
	line int
}

func open(path string, required []string) (*table, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		f.Close()
		if errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("%s: empty file: expected a header with %s", path, strings.Join(required, ","))
		}
		return nil, nil, &LineError{File: path, Line: 1, Err: err}
	}
	t := &table{file: path, r: r, cols: map[string]int{}, line: 1}
	for i, h := range header {
		t.cols[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, c := range required {
		if _, ok := t.cols[c]; !ok {
			f.Close()
			return nil, nil, &LineError{File: path, Line: 1, Err: fmt.Errorf("header lacks column %q (need %s)", c, strings.Join(required, ","))}
		}
	}
	return t, f, nil
}

// next returns the next record, or nil at the end.
func (t *table) next() ([]string, error) {
	rec, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	t.line++
	if err == nil {
		t.line, _ = t.r.FieldPos(0)
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, &LineError{File: t.file, Line: pe.Line, Err: pe.Err}
		}
		return nil, &LineError{File: t.file, Line: t.line, Err: err}
	}
	if len(rec) != len(t.cols) {
		return nil, &LineError{File: t.file, Line: t.line, Err: fmt.Errorf("%d fields, the header has %d", len(rec), len(t.cols))}
	}
	return rec, nil
}

func (t *table) str(rec []string, col string) string {
	i, ok := t.cols[col]
	if !ok {
		return ""
	}
	return strings.TrimSpace(rec[i])
}

func (t *table) int(rec []string, col string, lo, hi int64) (int64, error) {
	s := t.str(rec, col)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, &LineError{File: t.file, Line: t.line, Column: col, Err: fmt.Errorf("%q is not an integer", s)}
	}
	if v < lo || v > hi {
		return 0, &LineError{File: t.file, Line: t.line, Column: col, Err: fmt.Errorf("%d is outside %d..%d", v, lo, hi)}
	}
	return v, nil
}

func (t *table) fail(col string, format string, args ...any) error {
	return &LineError{File: t.file, Line: t.line, Column: col, Err: fmt.Errorf(format, args...)}
}

// ReadNodes reads an openb node list (sn,cpu_milli,memory_mib,gpu,model).
func ReadNodes(path string) ([]Node, error) {
	t, f, err := open(path, nodeColumns)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var nodes []Node
	seen := map[string]bool{}
	for {
		rec, err := t.next()
		if err != nil {
			return nil, err
		}
		if rec == nil {
			break
		}
		n := Node{Name: t.str(rec, "sn")}
		if !model.ValidToken(n.Name) {
			return nil, t.fail("sn", "%q is not a node name (letters, digits, - and _)", n.Name)
		}
		if seen[n.Name] {
			return nil, t.fail("sn", "node %q appears twice", n.Name)
		}
		seen[n.Name] = true
		if n.CPUMilli, err = t.int(rec, "cpu_milli", 1, 1<<40); err != nil {
			return nil, err
		}
		if n.MemoryMiB, err = t.int(rec, "memory_mib", 0, 1<<40); err != nil {
			return nil, err
		}
		gpus, err := t.int(rec, "gpu", 0, 64)
		if err != nil {
			return nil, err
		}
		n.GPUs = int(gpus)
		if name := t.str(rec, "model"); n.GPUs > 0 || name != "" {
			m, err := model.LookupModel(name)
			if err != nil {
				return nil, t.fail("model", "%v", err)
			}
			n.Model = m.Name
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s: no nodes", path)
	}
	return nodes, nil
}

// ReadPods reads an openb pod list: the eleven-column files, or the
// five-column ones (name,cpu_milli,memory_mib,num_gpu,gpu_milli).
func ReadPods(path string) ([]Pod, error) {
	t, f, err := open(path, podColumns[:5])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	_, hasSpec := t.cols["gpu_spec"]
	_, hasTimes := t.cols["creation_time"]
	var pods []Pod
	for {
		rec, err := t.next()
		if err != nil {
			return nil, err
		}
		if rec == nil {
			break
		}
		p := Pod{Name: t.str(rec, "name"), HasTimes: hasTimes}
		if p.Name == "" {
			return nil, t.fail("name", "empty")
		}
		if p.CPUMilli, err = t.int(rec, "cpu_milli", 0, 1<<40); err != nil {
			return nil, err
		}
		if p.MemoryMiB, err = t.int(rec, "memory_mib", 0, 1<<40); err != nil {
			return nil, err
		}
		k, err := t.int(rec, "num_gpu", 0, 64)
		if err != nil {
			return nil, err
		}
		g, err := t.int(rec, "gpu_milli", 0, 1000)
		if err != nil {
			return nil, err
		}
		p.GPUs, p.Milli = int(k), int(g)
		switch {
		case k == 0 && g != 0:
			return nil, t.fail("gpu_milli", "%d for a pod with num_gpu 0 (must be 0)", g)
		case k > 0 && g == 0:
			return nil, t.fail("gpu_milli", "0 for a pod with num_gpu %d (must be 1..1000)", k)
		case k > 1 && g != 1000:
			return nil, t.fail("gpu_milli", "%d for a pod with num_gpu %d (multi-GPU pods take whole GPUs: 1000)", g, k)
		}
		if hasSpec {
			p.Spec = t.str(rec, "gpu_spec")
			if p.Spec != "" {
				for _, name := range strings.Split(p.Spec, "|") {
					m, err := model.LookupModel(name)
					if err != nil {
						return nil, t.fail("gpu_spec", "%v", err)
					}
					p.Models = append(p.Models, m.Name)
				}
			}
		}
		p.QoS, p.Phase = t.str(rec, "qos"), t.str(rec, "pod_phase")
		if hasTimes {
			if p.Creation, err = t.int(rec, "creation_time", 0, 1<<40); err != nil {
				return nil, err
			}
			if p.Deletion, err = t.optInt(rec, "deletion_time"); err != nil {
				return nil, err
			}
			if p.Scheduled, err = t.optInt(rec, "scheduled_time"); err != nil {
				return nil, err
			}
		}
		pods = append(pods, p)
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("%s: no pods", path)
	}
	return pods, nil
}

// optInt reads a column that may be empty (then 0).
func (t *table) optInt(rec []string, col string) (int64, error) {
	if t.str(rec, col) == "" {
		return 0, nil
	}
	return t.int(rec, col, 0, 1<<40)
}

// Shape turns a node list into a cluster shape: nodes keep their names,
// GPUs are numbered gpu-0, gpu-1, … in node order; CPU and memory as given.
func Shape(nodes []Node) (model.Shape, error) {
	var shape model.Shape
	gpu := 0
	for _, n := range nodes {
		spec := model.NodeSpec{ID: n.Name, Labels: map[string]string{}, CPU: float64(n.CPUMilli) / 1000, Memory: model.Bytes(n.MemoryMiB) * model.MiB}
		if n.GPUs > 0 {
			m, err := model.LookupModel(n.Model)
			if err != nil {
				return model.Shape{}, fmt.Errorf("node %s: %v", n.Name, err)
			}
			for i := 0; i < n.GPUs; i++ {
				spec.GPUs = append(spec.GPUs, model.GPUSpec{ID: "gpu-" + strconv.Itoa(gpu), Model: m})
				gpu++
			}
		}
		shape.Nodes = append(shape.Nodes, spec)
	}
	return shape, nil
}

// WorkloadName is the name the FGD results give a pod file: its base name
// without the extension ("openb_pod_list_default").
func WorkloadName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}
