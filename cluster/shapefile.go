package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/openb"
)

// fileNode is one entry of a cluster file's nodes list.
type fileNode struct {
	// Name is the node's id; with Count > 1 the nodes are Name-0, Name-1, …
	Name   string            `yaml:"name"`
	Count  int               `yaml:"count"`
	Labels map[string]string `yaml:"labels"`
	// CPU is cores; Memory a size ("768GiB").
	CPU    float64 `yaml:"cpu"`
	Memory string  `yaml:"memory"`
	// GPUs is COUNTxMODEL ("8xA100-80GB"); empty for a CPU-only node.
	GPUs string `yaml:"gpus"`
}

type fileCluster struct {
	Nodes []fileNode `yaml:"nodes"`
}

var gpusTerm = regexp.MustCompile(`^(\d+)\s*[xX×]\s*(\S+)$`)

// LoadShape reads a cluster file: a YAML file (see docs/CLUSTERS.md), or an
// openb node list (a .csv with sn,cpu_milli,memory_mib,gpu,model).
func LoadShape(path string) (model.Shape, error) {
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		nodes, err := openb.ReadNodes(path)
		if err != nil {
			return model.Shape{}, err
		}
		return openb.Shape(nodes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return model.Shape{}, err
	}
	return ParseShapeYAML(path, data)
}

// ParseShapeYAML parses a YAML cluster file; name is used in errors.
func ParseShapeYAML(name string, data []byte) (model.Shape, error) {
	var fc fileCluster
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fc); err != nil {
		if errors.Is(err, io.EOF) {
			return model.Shape{}, fmt.Errorf("%s: empty cluster file: it needs a nodes list", name)
		}
		return model.Shape{}, fmt.Errorf("%s: %v", name, err)
	}
	if len(fc.Nodes) == 0 {
		return model.Shape{}, fmt.Errorf("%s: no nodes: the file needs a nodes list", name)
	}
	var shape model.Shape
	seen := map[string]bool{}
	gpu := 0
	for i, fn := range fc.Nodes {
		where := fmt.Sprintf("%s: nodes[%d]", name, i)
		count := fn.Count
		if count == 0 {
			count = 1
		}
		if count < 0 {
			return model.Shape{}, fmt.Errorf("%s: count must be positive, not %d", where, fn.Count)
		}
		if fn.CPU <= 0 {
			return model.Shape{}, fmt.Errorf("%s: cpu must be a positive number of cores", where)
		}
		mem, err := model.ParseBytes(fn.Memory)
		if err != nil || mem <= 0 {
			return model.Shape{}, fmt.Errorf("%s: memory %q is not a positive size (for example 512GiB)", where, fn.Memory)
		}
		var gpuCount int
		var gm model.GPUModel
		if fn.GPUs != "" {
			m := gpusTerm.FindStringSubmatch(strings.TrimSpace(fn.GPUs))
			if m == nil {
				return model.Shape{}, fmt.Errorf("%s: gpus %q is not COUNTxMODEL (for example 8xA100-80GB)", where, fn.GPUs)
			}
			gpuCount, _ = strconv.Atoi(m[1])
			if gm, err = model.LookupModel(m[2]); err != nil {
				return model.Shape{}, fmt.Errorf("%s: %v", where, err)
			}
		}
		for k := 0; k < count; k++ {
			id := fn.Name
			switch {
			case id == "":
				id = "node-" + strconv.Itoa(len(shape.Nodes))
			case count > 1:
				id += "-" + strconv.Itoa(k)
			}
			if !model.ValidToken(id) {
				return model.Shape{}, fmt.Errorf("%s: name %q: use letters, digits, - and _ only", where, id)
			}
			if seen[id] {
				return model.Shape{}, fmt.Errorf("%s: node %q appears twice", where, id)
			}
			seen[id] = true
			spec := model.NodeSpec{ID: id, Labels: map[string]string{}, CPU: fn.CPU, Memory: mem}
			for lk, lv := range fn.Labels {
				spec.Labels[lk] = lv
			}
			for range gpuCount {
				spec.GPUs = append(spec.GPUs, model.GPUSpec{ID: "gpu-" + strconv.Itoa(gpu), Model: gm})
				gpu++
			}
			shape.Nodes = append(shape.Nodes, spec)
		}
	}
	return shape, nil
}
