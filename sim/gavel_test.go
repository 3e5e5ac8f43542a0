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

// TestGavelTraceUnderAPlacementPolicy: a Gavel trace (30 jobs at t = 0,
// multi-GPU, 8:8:8) run live under binpack and spread with FIFO instead of
// Gavel's rounds completes every job; each JCT is at least the job's
// steps at its best rate alone (no job runs faster than the table allows),
// and the utilisation is a fraction. The same seed gives the same JCTs.
func TestGavelTraceUnderAPlacementPolicy(t *testing.T) {
	data, err := gavel.Load(tracedir.Gavel(t))
	if err != nil {
		t.Fatal(err)
	}
	c := gavel.Config{Policy: "fifo", Seed: 3, Counts: [3]int{8, 8, 8}, WindowEnd: 30, MultiGPU: true}
	for _, placement := range []string{"binpack", "spread"} {
		res, err := RunGavelPlaced(context.Background(), data, c, placement, "fifo", nil)
		if err != nil {
			t.Fatal(placement, err)
		}
		again, err := RunGavelPlaced(context.Background(), data, c, placement, "fifo", nil)
		if err != nil {
			t.Fatal(placement, err)
		}
		if res.Completed != 30 || res.Utilization <= 0 || res.Utilization > 1 {
			t.Fatalf("%s: %d completed, utilisation %v", placement, res.Completed, res.Utilization)
		}
		for i, j := range res.Jobs {
			fastest := 0.0
			for _, m := range data.Table.Models() {
				if r, ok := data.Table.Alone(m, j.Type, j.Scale); ok {
					fastest = max(fastest, r)
				}
			}
			if j.JCT < j.TotalSteps/fastest*(1-1e-9) {
				t.Fatalf("%s: job %d took %v s, less than its %v steps at its best rate %v/s", placement, j.ID, j.JCT, j.TotalSteps, fastest)
			}
			if again.Jobs[i].JCT != j.JCT {
				t.Fatalf("%s: job %d took %v s, then %v s on the same seed", placement, j.ID, j.JCT, again.Jobs[i].JCT)
			}
		}
		t.Logf("%s: average JCT %.0f s, makespan %.0f s, utilisation %.3f", placement, res.AverageJCT, res.Makespan, res.Utilization)
	}
}
