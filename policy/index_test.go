package policy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/vram"
)

// mixedCluster is n GPUs on 8-GPU nodes of two models, empty, with a
// seeded rank per node.
func mixedCluster(n int, rng *rand.Rand, vm vram.Model) *Cluster {
	c := &Cluster{VRAMModel: vm, Workload: &Workload{Classes: []Class{{GPUs: 1, Milli: 500, CPUMilli: 4000, P: 0.5},
		{GPUs: 1, Milli: 1000, CPUMilli: 8000, P: 0.3}, {GPUs: 2, Milli: 1000, P: 0.1}, {GPUs: 0, CPUMilli: 2000, P: 0.1}}}}
	for i := 0; i < n; i++ {
		if i%8 == 0 {
			m := "A100-80GB"
			if rng.IntN(3) == 0 {
				m = "A100-40GB"
			}
			c.Nodes = append(c.Nodes, &Node{ID: "node-" + strconv.Itoa(i/8), Index: i / 8, CPUMilli: 64000, MemTotal: int64(512 * model.GiB),
				Alive: true, Model: m, Rank: rng.IntN(1 << 20)})
		}
		node := c.Nodes[i/8]
		gm, _ := model.LookupModel(node.Model)
		g := &GPU{ID: "gpu-" + strconv.Itoa(i), Node: node.ID, Model: node.Model, Index: i, NodeIndex: i / 8, VRAMTotal: int64(gm.VRAM), Alive: true}
		node.GPUs = append(node.GPUs, i)
		c.GPUs = append(c.GPUs, g)
	}
	return c
}

// randomRequest is a request of one of a few classes, so that classes
// repeat (as a trace's do), sometimes with a model constraint or a pin.
func randomRequest(rng *rand.Rand, c *Cluster) *Request {
	r := &Request{GPUs: 1, CPUMilli: int64(rng.IntN(4)) * 4000, Memory: int64(rng.IntN(3)) * int64(16*model.GiB),
		Util: []float64{10, 30, 55, 100}[rng.IntN(4)]}
	switch rng.IntN(6) {
	case 0:
		r.VRAM = int64(1+rng.IntN(3)) * int64(8*model.GiB)
	case 1:
		r.Milli = []int{250, 500, 1000}[rng.IntN(3)]
	case 2:
		r.GPUs, r.Milli = 2, 1000
	case 3:
		r.GPUs = 0
	case 4:
		r.VRAM = int64(20 * model.GiB)
		r.Models = []string{"A100-40GB"}
	default:
		r.VRAM = int64(4 * model.GiB)
		if rng.IntN(4) == 0 {
			r.PinNode = c.Nodes[rng.IntN(len(c.Nodes))].ID
		}
	}
	return r
}

// apply lands a placement on c the way the scheduler's view does, and
// touches what changed.
func apply(c *Cluster, r *Request, p Placement, id string) {
	n := c.Nodes[p.NodeIdx]
	n.CPUUsedMilli += r.CPUMilli
	n.MemUsed += r.Memory
	c.TouchNode(n)
	for _, gi := range p.GPUIdx {
		g := c.GPUs[gi]
		size := r.VRAMOn(g)
		g.Allocs = append(g.Allocs, vram.Alloc{Owner: id, Offset: g.VRAMUsed(), Size: size})
		g.MilliUsed += r.MilliOn(g)
		g.Util += r.Util
		g.Shares = append(g.Shares, Share{JobID: id, VRAM: size, Util: r.Util, Milli: r.MilliOn(g), CPUMilli: r.CPUMilli, Memory: r.Memory, GPUs: r.GPUs})
		c.Touch(g)
	}
}

// release removes job id from every GPU and gives its node back what r held.
func release(c *Cluster, r *Request, node int, id string) {
	n := c.Nodes[node]
	n.CPUUsedMilli -= r.CPUMilli
	n.MemUsed -= r.Memory
	c.TouchNode(n)
	for _, gi := range n.GPUs {
		g := c.GPUs[gi]
		for k, a := range g.Allocs {
			if a.Owner == id {
				g.Allocs = slices.Delete(g.Allocs, k, k+1)
				g.MilliUsed -= g.Shares[k].Milli
				g.Util -= g.Shares[k].Util
				g.Shares = slices.Delete(g.Shares, k, k+1)
				c.Touch(g)
				break
			}
		}
	}
}

// TestIndexDecidesAsTheScan places, releases and kills at random on a
// cluster with an Index and checks each decision, under every indexed
// policy, against the same decision without the Index.
func TestIndexDecidesAsTheScan(t *testing.T) {
	for _, vm := range []vram.Model{vram.Contiguous, vram.Pooled} {
		for _, name := range []string{"binpack", "spread", "first-fit", "best-fit", "fgd", "smallest-fit"} {
			t.Run(fmt.Sprintf("%s/%s", name, vm), func(t *testing.T) {
				seed := uint64(len(name))
				rng := rand.New(rand.NewPCG(seed, 7))
				c := mixedCluster(200, rng, vm)
				c.Index = NewIndex()
				p, _ := Lookup[Policy](name)
				// The compute bound where the policy has it, at a ratio
				// that moves: the index skips busy subtrees as the scan
				// refuses busy GPUs.
				c.ComputeBound = BindsCapacity(p)
				type running struct {
					r    *Request
					node int
					id   string
				}
				var live []running
				decisions := 0
				for step := 0; step < 3000; step++ {
					switch k := rng.IntN(10); {
					case k < 6:
						r := randomRequest(rng, c)
						got := Place(c, r, p)
						idx := c.Index
						c.Index = nil
						want := Place(c, r, p)
						c.Index = idx
						decisions++
						if fmt.Sprint(got) != fmt.Sprint(want) {
							t.Fatalf("seed %d step %d: %+v: indexed %v, scanned %v", seed, step, *r, got, want)
						}
						if len(got) > 0 {
							id := "j" + strconv.Itoa(step)
							apply(c, r, got[0], id)
							live = append(live, running{r, got[0].NodeIdx, id})
						}
					case k < 9 && len(live) > 0:
						i := rng.IntN(len(live))
						release(c, live[i].r, live[i].node, live[i].id)
						live = slices.Delete(live, i, i+1)
					case rng.IntN(4) == 0:
						// A new workload (the live scheduler learns one): fgd's
						// scores all move.
						w := *c.Workload
						w.Classes = slices.Clone(w.Classes)
						w.Classes[0].P, w.Classes[1].P = w.Classes[1].P, w.Classes[0].P
						c.Workload = &w
					case rng.IntN(3) == 0:
						c.Oversubscribe = []float64{1, 1.5, 2}[rng.IntN(3)]
					default:
						g := c.GPUs[rng.IntN(len(c.GPUs))]
						g.Alive = !g.Alive
						c.Touch(g)
					}
				}
				if decisions < 1000 {
					t.Fatalf("only %d decisions", decisions)
				}
			})
		}
	}
}

// TestIndexStartsOverWhenTheClusterGrows checks that GPUs added after the
// index was built are seen (the index notices the count changed).
func TestIndexStartsOverWhenTheClusterGrows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	c := mixedCluster(16, rng, vram.Contiguous)
	c.Index = NewIndex()
	p, _ := Lookup[Policy]("first-fit")
	r := &Request{GPUs: 1, VRAM: int64(70 * model.GiB)}
	for _, g := range c.GPUs {
		g.Alive = false
		c.Touch(g)
	}
	if got := Place(c, r, p); len(got) != 0 {
		t.Fatalf("placed on a dead cluster: %v", got)
	}
	bigger := mixedCluster(24, rng, vram.Contiguous)
	c.GPUs = append(c.GPUs, bigger.GPUs[16:]...)
	c.Nodes = append(c.Nodes, bigger.Nodes[2:]...)
	got := Place(c, r, p)
	if len(got) == 0 || got[0].GPUIdx[0] < 16 {
		t.Fatalf("the new GPUs were not seen: %v", got)
	}
}

// TestIndexChangeLogsStayBounded: changes made while no indexed decision
// reads them (a policy the index does not serve) do not pile up.
func TestIndexChangeLogsStayBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	c := mixedCluster(64, rng, vram.Contiguous)
	c.Index = NewIndex()
	p, _ := Lookup[Policy]("binpack")
	r := &Request{GPUs: 1, VRAM: int64(4 * model.GiB)}
	Place(c, r, p)
	for i := 0; i < 100000; i++ {
		c.Touch(c.GPUs[i%len(c.GPUs)])
	}
	if n := len(c.Index.gpuLog); n > 4*len(c.GPUs)+8192 {
		t.Fatalf("%d changes logged for 64 GPUs", n)
	}
	idx := c.Index
	c.Index = nil
	want := Place(c, r, p)
	c.Index = idx
	if got := Place(c, r, p); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the index started over: %v, a scan %v", got, want)
	}
}
