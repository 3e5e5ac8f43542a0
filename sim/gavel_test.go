package sim

import (
	"context"
	"math"
	"testing"

	"github.com/gpusched/gpusched/gavel"
	"github.com/gpusched/gpusched/internal/tracedir"
)

// TestGavelLiveIsOffline (issue 40): Gavel's exact policies run live —
// the jobs submitted over the bus, the scheduler stepping the rounds, the
// GPU actors running them at the table's rates — complete every job at
// the second the offline run does, to the last bit, static and
// continuous, single- and multi-GPU.
func TestGavelLiveIsOffline(t *testing.T) {
	data, err := gavel.Load(tracedir.Gavel(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []gavel.Config{
		{Policy: "fifo", Seed: 0, Counts: [3]int{4, 4, 4}, WindowEnd: 30},
		{Policy: "gandiva", Seed: 1, Counts: [3]int{4, 4, 4}, WindowEnd: 30},
		{Policy: "allox", Seed: 2, Counts: [3]int{4, 4, 4}, Lam: 4800, WindowStart: 10, WindowEnd: 40},
		{Policy: "isolated", Seed: 0, Counts: [3]int{8, 8, 8}, WindowEnd: 20, MultiGPU: true},
	} {
		off, err := gavel.Run(context.Background(), data, c)
		if err != nil {
			t.Fatalf("%+v offline: %v", c, err)
		}
		live, err := RunGavel(context.Background(), data, c, nil, nil)
		if err != nil {
			t.Fatalf("%+v live: %v", c, err)
		}
		if len(live.Result.Jobs) != len(off.Jobs) {
			t.Fatalf("%s: %d jobs live, %d offline", c.Policy, len(live.Result.Jobs), len(off.Jobs))
		}
		for i, j := range off.Jobs {
			lj := live.Result.Jobs[i]
			if lj.JCT != j.JCT && !(math.IsNaN(lj.JCT) && math.IsNaN(j.JCT)) {
				t.Fatalf("%s seed %d: job %d JCT %v live, %v offline", c.Policy, c.Seed, j.ID, lj.JCT, j.JCT)
			}
		}
		if live.Result.AverageJCT != off.AverageJCT || live.Result.Utilization != off.Utilization {
			t.Fatalf("%s: average JCT %v / utilisation %v live, %v / %v offline", c.Policy, live.Result.AverageJCT, live.Result.Utilization, off.AverageJCT, off.Utilization)
		}
		t.Logf("%s seed %d: %d jobs, average JCT %.3f s both ways; live %s simulated in %s", c.Policy, c.Seed, len(off.Jobs), off.AverageJCT, live.Run.Length, live.Run.Wall)
	}
}
