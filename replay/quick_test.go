package replay

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gpusched/gpusched/openb"
	"github.com/gpusched/gpusched/policy"
)

func TestQuick(t *testing.T) {
	dir := "/work/shared/traces/alibaba-openb/"
	nodes, err := openb.ReadNodes(dir + "openb_node_list_gpu_node.csv")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ReadPublished(dir + "fgd-expected-results")
	if err != nil {
		t.Fatal(err)
	}
	for _, wl := range []string{"openb_pod_list_default"} {
		pods, err := openb.ReadPods(dir + wl + ".csv")
		if err != nil {
			t.Fatal(err)
		}
		for _, pn := range []string{"dotprod", "gpu-clustering", "gpu-packing", "best-fit", "fgd"} {
			pol, _ := policy.Lookup(pn)
			for seed := int64(42); seed <= 44; seed++ {
				start := time.Now()
				plan := Prepare(nodes, pods, seed, 1.3)
				_, m, err := Offline(&plan, pol, nil)
				if err != nil {
					t.Fatal(err)
				}
				c := Curve(m.Events(), plan.CapacityMilli)
				want := pub[RunKey{wl, pn, seed}]
				match, first := 0, -1
				var maxd float64
				for k := range c {
					d := math.Max(math.Abs(c[k].Alloc-want[k].Alloc), math.Max(math.Abs(c[k].Frag-want[k].Frag), math.Abs(c[k].FragRatio-want[k].FragRatio)))
					if d <= 0.0100001 {
						match++
					} else if first < 0 {
						first = k
					}
					maxd = math.Max(maxd, d)
				}
				fmt.Printf("%s %s %d: %d/131 first-diff %d max %.3f clones %d pods %d  %v   at100 ours %.2f/%.2f/%.2f pub %.2f/%.2f/%.2f\n", wl, pn, seed, match, first, maxd, plan.Clones, len(plan.Pods), time.Since(start).Round(time.Millisecond),
					c[100].Alloc, c[100].Frag, c[100].FragRatio, want[100].Alloc, want[100].Frag, want[100].FragRatio)
			}
		}
	}
}
