package policy

import (
	"cmp"
	"slices"
	"strings"
)

// Class is one task class of a workload (the FGD paper's m): the CPU,
// the share per GPU and the GPU count of a kind of job, the GPU models it
// may use, and its popularity P (the classes' P sum to 1).
type Class struct {
	CPUMilli int64
	Milli    int
	GPUs     int
	// Models restricts the GPU models; empty means any.
	Models []string
	P      float64
	// Count is how many jobs of the workload fall in the class.
	Count int
}

// Key is the class's identity: CPU, share, GPU count and allowed models.
type ClassKey struct {
	CPUMilli int64
	Milli    int
	GPUs     int
	// Models is the allowed models joined by "|" ("" for any).
	Models string
}

// Workload is the target workload M of the fragmentation measure: its
// typical classes with their popularity, most popular first.
type Workload struct {
	Classes []Class
}

// TypicalCoverage is the share of jobs the typical classes must cover: the
// FGD simulator keeps the most common classes up to 95% of the pods.
const TypicalCoverage = 0.95

// TypicalWorkload builds the workload of the classes covering
// TypicalCoverage of counts (the FGD paper's typical pods, POLICIES.md §4):
// classes sorted by count, descending, ties to the larger key (CPU, share,
// GPU count, models, compared in that order); the shortest prefix whose
// count reaches 95% of all jobs is kept and its popularity renormalised.
func TypicalWorkload(counts map[ClassKey]int) *Workload {
	keys := make([]ClassKey, 0, len(counts))
	total := 0
	for k, n := range counts {
		keys = append(keys, k)
		total += n
	}
	slices.SortFunc(keys, func(a, b ClassKey) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return -compareKeys(a, b)
	})
	w := &Workload{}
	kept := 0
	for _, k := range keys {
		if float64(kept) >= TypicalCoverage*float64(total) {
			break
		}
		kept += counts[k]
		var models []string
		if k.Models != "" {
			models = strings.Split(k.Models, "|")
		}
		w.Classes = append(w.Classes, Class{CPUMilli: k.CPUMilli, Milli: k.Milli, GPUs: k.GPUs, Models: models, Count: counts[k]})
	}
	// p_m in the simulator's floating-point form, (count_m / N) / (kept / N)
	// with N all jobs: it differs from count_m / kept in the last bits, and
	// those bits decide FGD ties (POLICIES.md §2).
	n := float64(total)
	for i := range w.Classes {
		w.Classes[i].P = (float64(w.Classes[i].Count) / n) / (float64(kept) / n)
	}
	return w
}

func compareKeys(a, b ClassKey) int {
	if c := cmp.Compare(a.CPUMilli, b.CPUMilli); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Milli, b.Milli); c != 0 {
		return c
	}
	if c := cmp.Compare(a.GPUs, b.GPUs); c != 0 {
		return c
	}
	return cmp.Compare(a.Models, b.Models)
}

// allows reports whether the class may run on GPUs of model m.
func (c *Class) allows(m string) bool { return len(c.Models) == 0 || slices.Contains(c.Models, m) }

// ClassFrag is F_n(m) of the README's fragmentation measure: the GPU share
// (thousandths) on a node of GPU model nodeModel, with cpuFree CPU and the
// GPUs' free shares free, that class m cannot use. All of it when m cannot
// run there (a CPU-only class, a model it may not use, too little CPU, too
// few GPUs with its share free); otherwise the leftovers smaller than its
// share.
func ClassFrag(m *Class, nodeModel string, cpuFree int64, free []int) int {
	total, small, fitting := 0, 0, 0
	for _, r := range free {
		total += r
		if r < m.Milli {
			small += r
		} else {
			fitting++
		}
	}
	if m.GPUs == 0 || !m.allows(nodeModel) || cpuFree < m.CPUMilli || fitting < m.GPUs {
		return total
	}
	return small
}

// NodeFrag is F_n(M) = Σ_m p_m·F_n(m): the node's expected fragmented GPU
// share (thousandths) against the workload. FGD's score and the
// fragmentation metric both read it, and FGD's score truncates, so the
// floating-point order of the sum decides ties (a Δ of −4.5e−13 where exact
// arithmetic gives 0 scores 49, not 50). It is therefore summed as the
// published simulator does (POLICIES.md §2, "Floating-point order of Φ"):
// each class's p·(fragmented share) is added, in the workload's order, to
// one of seven running sums by why that share is lost to the class, and the
// sums are added in index order at the end, leaving out sum 2 (the share
// the class can use). The numbering is the simulator's:
//
//	0: too few GPUs with the class's share free, and too little CPU
//	1: the share a class that fits cannot use (free shares below its own),
//	   or all of it when too few GPUs have its share free but CPU fits
//	2: the share a class that fits can use (not fragmentation)
//	3: enough GPUs, too little CPU
//	4: a CPU-only class, CPU fits
//	5: a CPU-only class, too little CPU
//	6: a model the class may not use
//
// The result equals Σ_m p_m·ClassFrag(m) up to rounding.
func NodeFrag(w *Workload, nodeModel string, cpuFree int64, free []int) float64 {
	if w == nil {
		return 0
	}
	var bins [7]float64
	total := 0
	for _, r := range free {
		total += r
	}
	t := float64(total)
	for i := range w.Classes {
		m := &w.Classes[i]
		cpuFits := cpuFree >= m.CPUMilli
		switch {
		case m.GPUs > 0 && !m.allows(nodeModel):
			bins[6] += m.P * t
		case m.GPUs == 0 && cpuFits:
			bins[4] += m.P * t
		case m.GPUs == 0:
			bins[5] += m.P * t
		default:
			small, fitting := 0, 0
			for _, r := range free {
				if r < m.Milli {
					small += r
				} else {
					fitting++
				}
			}
			switch enough := fitting >= m.GPUs; {
			case enough && cpuFits:
				bins[1] += m.P * float64(small)
				bins[2] += m.P * float64(total-small)
			case enough:
				bins[3] += m.P * t
			case cpuFits:
				bins[1] += m.P * t
			default:
				bins[0] += m.P * t
			}
		}
	}
	return bins[0] + bins[1] + bins[3] + bins[4] + bins[5] + bins[6]
}

// Fragmentation is the cluster's fragmentation measure.
type Fragmentation struct {
	// Amount is F(M) = Σ_n F_n(M), in thousandths of a GPU.
	Amount float64
	// Free is the idle GPU share Σ_n Σ_g r_g, in thousandths of a GPU.
	Free int64
	// Used is the GPU share jobs hold, in thousandths of a GPU.
	Used int64
}

// Ratio is F(M) as a fraction of the idle GPU share (0 when none is idle).
func (f Fragmentation) Ratio() float64 {
	if f.Free == 0 {
		return 0
	}
	return f.Amount / float64(f.Free)
}

// freeShares fills buf with the free share of each of n's GPUs.
func (c *Cluster) freeShares(n *Node, buf []int) []int {
	buf = buf[:0]
	for _, gi := range n.GPUs {
		buf = append(buf, c.GPUs[gi].MilliFree())
	}
	return buf
}

// NodeFragmentation is F_n(M) of node n now.
func (c *Cluster) NodeFragmentation(n *Node) float64 {
	var buf [16]int
	return NodeFrag(c.Workload, n.Model, n.CPUFree(), c.freeShares(n, buf[:0]))
}

// Fragmentation measures the whole cluster against its workload.
func (c *Cluster) Fragmentation() Fragmentation {
	var f Fragmentation
	var buf [16]int
	for _, n := range c.Nodes {
		free := c.freeShares(n, buf[:0])
		for _, r := range free {
			f.Free += int64(r)
			f.Used += int64(MilliPerGPU - r)
		}
		f.Amount += NodeFrag(c.Workload, n.Model, n.CPUFree(), free)
	}
	return f
}

// GPUFrags splits F_n(M) over the node's GPUs: out[i] is the part of GPU i
// (its free share, weighted by the popularity of the classes that cannot
// use it). The parts sum to NodeFrag.
func GPUFrags(w *Workload, nodeModel string, cpuFree int64, free []int) []float64 {
	out := make([]float64, len(free))
	if w == nil {
		return out
	}
	for ci := range w.Classes {
		m := &w.Classes[ci]
		whole := ClassFrag(m, nodeModel, cpuFree, free) == sum(free)
		for i, r := range free {
			if whole || r < m.Milli {
				out[i] += m.P * float64(r)
			}
		}
	}
	return out
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}
