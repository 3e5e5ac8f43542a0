package policy

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/vram"
)

// randomCluster builds n A100-80GB GPUs on 8-GPU nodes, each with 0–3
// seeded random jobs.
func randomCluster(n int, seed uint64) *Cluster {
	rng := rand.New(rand.NewPCG(seed, 1))
	c := &Cluster{VRAMModel: vram.Contiguous}
	for i := 0; i < n; i++ {
		if i%8 == 0 {
			c.Nodes = append(c.Nodes, &Node{ID: "node-" + strconv.Itoa(i/8), Index: i / 8, CPUMilli: 128000, MemTotal: int64(1 * model.TiB), Alive: true})
		}
		g := &GPU{ID: "gpu-" + strconv.Itoa(i), Node: c.Nodes[i/8].ID, Model: "A100-80GB", Index: i, NodeIndex: i / 8,
			VRAMTotal: int64(80 * model.GiB), Alive: true}
		var off int64
		for k := rng.IntN(4); k > 0; k-- {
			size := int64(1+rng.IntN(20)) * int64(model.GiB)
			g.Allocs = append(g.Allocs, vram.Alloc{Owner: fmt.Sprintf("j%d-%d", i, k), Offset: off, Size: size})
			g.Shares = append(g.Shares, Share{JobID: fmt.Sprintf("j%d-%d", i, k), VRAM: size, Util: 20, Priority: 1, Preemptible: true})
			g.Util += 20
			off += size
		}
		c.Nodes[i/8].GPUs = append(c.Nodes[i/8].GPUs, i)
		c.GPUs = append(c.GPUs, g)
	}
	return c
}

// BenchmarkPlace is one placement decision per policy as the cluster grows.
func BenchmarkPlace(b *testing.B) {
	for _, n := range []int{8, 1000, 10000} {
		c := randomCluster(n, 1)
		for _, name := range Names() {
			p, _ := Lookup(name)
			b.Run(fmt.Sprintf("%s/gpus=%d", name, n), func(b *testing.B) {
				r := &Request{GPUs: 1, VRAM: int64(10 * model.GiB), Util: 30, CPUMilli: 4000, Memory: int64(16 * model.GiB)}
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if len(Place(c, r, p)) == 0 {
						b.Fatal("no placement")
					}
				}
			})
		}
	}
}
