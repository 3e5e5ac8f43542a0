package model

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// GPUSpec describes one GPU of a cluster shape.
type GPUSpec struct {
	ID    string
	Model GPUModel
	// Variability is this GPU's own pace per application class: the
	// multiplier on a job's iteration time here against the median GPU's
	// (bigger is slower; a class it lacks runs at 1). Identical GPUs are
	// not identical (PAL, SC'24: up to 2.8× on one supercomputer's V100s).
	Variability map[string]float64
}

// NodeSpec describes one node: its id, labels, CPU cores, memory and GPUs.
type NodeSpec struct {
	ID     string
	Labels map[string]string
	CPU    float64
	Memory Bytes
	GPUs   []GPUSpec
}

// Shape is a whole cluster: its nodes in order.
type Shape struct {
	Nodes []NodeSpec
}

// GPUCount returns the number of GPUs in the shape.
func (s Shape) GPUCount() int {
	n := 0
	for _, node := range s.Nodes {
		n += len(node.GPUs)
	}
	return n
}

// MaxGPUsPerNode is the largest node a --gpus shape builds.
const MaxGPUsPerNode = 8

// Per-GPU host resources for nodes built from a --gpus shape: 16 cores and
// 128 GiB of host memory per GPU, the ratio of a DGX A100 (128 cores, 1 TiB,
// 8 GPUs).
const (
	cpuPerGPU    = 16
	memoryPerGPU = 128 * GiB
)

// DefaultGPUs is the reference demo's cluster: 6 A100 40GB and 2 A100 80GB.
const DefaultGPUs = "6xA100-40GB,2xA100-80GB"

var shapeTerm = regexp.MustCompile(`^(\d+)\s*[xX×]\s*(\S+)$`)

// ParseGPUs builds a cluster from a shape such as "6xA100-40GB,2xA100-80GB".
// Each term starts new nodes of at most MaxGPUsPerNode GPUs of its model;
// nodes are named node-0, node-1, … and GPUs gpu-0, gpu-1, … in order, so
// the default shape is node-0 (gpu-0…gpu-5) and node-1 (gpu-6, gpu-7).
func ParseGPUs(s string) (Shape, error) {
	var shape Shape
	gpu := 0
	terms := strings.Split(s, ",")
	for _, term := range terms {
		term = strings.TrimSpace(term)
		m := shapeTerm.FindStringSubmatch(term)
		if m == nil {
			return Shape{}, fmt.Errorf("--gpus: %q is not COUNTxMODEL (for example 6xA100-40GB)", term)
		}
		count, err := strconv.Atoi(m[1])
		if err != nil || count <= 0 {
			return Shape{}, fmt.Errorf("--gpus: count in %q must be a positive integer", term)
		}
		model, err := LookupModel(m[2])
		if err != nil {
			return Shape{}, fmt.Errorf("--gpus: %v", err)
		}
		for count > 0 {
			n := min(count, MaxGPUsPerNode)
			node := NodeSpec{
				ID:     "node-" + strconv.Itoa(len(shape.Nodes)),
				Labels: map[string]string{},
				CPU:    float64(n * cpuPerGPU),
				Memory: Bytes(n) * memoryPerGPU,
			}
			for i := 0; i < n; i++ {
				node.GPUs = append(node.GPUs, GPUSpec{ID: "gpu-" + strconv.Itoa(gpu), Model: model})
				gpu++
			}
			shape.Nodes = append(shape.Nodes, node)
			count -= n
		}
	}
	return shape, nil
}

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ValidToken reports whether s can be a NATS subject token for a node or GPU id.
func ValidToken(s string) bool { return tokenRE.MatchString(s) }
