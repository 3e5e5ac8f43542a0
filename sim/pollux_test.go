package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpusched/gpusched/internal/tracedir"
	"github.com/gpusched/gpusched/pollux"
)

// TestPolluxLiveEqualsOffline runs Pollux workloads under Tiresias and
// Optimus through the live cluster — jobs submitted over NATS, the
// scheduler's training rounds, the GPU actors stepping the jobs — and
// offline on the pure model: every job's JCT and restarts are the same
// (and so the published ones). Optimus at load 0.5, workload 8, has a job
// whose last epoch ends exactly at an interval's end (it completes at the
// first second of the next, after that second's decision: a GPU that
// completed it before the decision changed three jobs' JCTs); Tiresias at
// load 1.5, workload 5, had 17 jobs differ the same way.
func TestPolluxLiveEqualsOffline(t *testing.T) {
	dir := tracedir.Pollux(t)
	m, err := pollux.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		policy   string
		load     float64
		workload int
	}{{"tiresias", 1, 6}, {"optimus", 0.5, 8}, {"optimus", 1, 6}, {"tiresias", 1.5, 5}}
	if os.Getenv("GPUSCHED_LONG") == "" {
		// The last two take a minute under -race, beside the timing-bound
		// cluster tests; the 48 published runs are checked by the command
		// (docs/validation/pollux.md).
		runs = runs[:2]
	}
	for _, r := range runs {
		specs, err := pollux.ReadWorkload(filepath.Join(pollux.LoadFolder(dir, r.load), fmt.Sprintf("workload-%d.csv", r.workload)))
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s load %g workload %d", r.policy, r.load, r.workload)
		p, _ := pollux.NewPolicy(r.policy)
		want, err := pollux.Run(m, specs, pollux.Reference, p)
		if err != nil {
			t.Fatal(err)
		}
		p, _ = pollux.NewPolicy(r.policy)
		live, err := RunPollux(context.Background(), m, specs, pollux.Reference, p, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		same, shown := 0, 0
		for i, j := range live.Result.Jobs {
			w := want.Jobs[i]
			if j.JCT() == w.JCT() && j.Restarts == w.Restarts {
				same++
			} else if shown++; shown <= 5 {
				t.Errorf("%s, %s: live JCT %d, restarts %d; offline %d, %d", name, j.Name, j.JCT(), j.Restarts, w.JCT(), w.Restarts)
			}
		}
		if same != len(specs) {
			t.Errorf("%s: %d of %d jobs equal live and offline; live average %v, offline %v", name, same, len(specs), live.Result.MeanJCT(), want.MeanJCT())
		}
		t.Logf("%s: live run %s wall, %s simulated, %d instants", name, live.Run.Wall, live.Run.Length, live.Run.Instants)
	}
}

// TestPolluxPolicyLiveEqualsOffline: Pollux's elastic jobs travel too —
// their profiles and fitted models go to the GPUs with each placement and
// come back with their states — so the first 6 jobs of workload 6 under
// the Pollux policy (its search drawn from seed 1) give the offline run's
// JCTs and restarts, job for job.
func TestPolluxPolicyLiveEqualsOffline(t *testing.T) {
	dir := tracedir.Pollux(t)
	m, err := pollux.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := pollux.ReadWorkload(filepath.Join(pollux.LoadFolder(dir, 1), "workload-6.csv"))
	if err != nil {
		t.Fatal(err)
	}
	specs = specs[:6]
	want, err := pollux.Run(m, specs, pollux.Reference, pollux.NewPollux(1))
	if err != nil {
		t.Fatal(err)
	}
	live, err := RunPollux(context.Background(), m, specs, pollux.Reference, pollux.NewPollux(1), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := range live.Result.Jobs {
		if w := want.Jobs[i]; j.JCT() != w.JCT() || j.Restarts != w.Restarts {
			t.Errorf("%s: live JCT %d, restarts %d; offline %d, %d", j.Name, j.JCT(), j.Restarts, w.JCT(), w.Restarts)
		}
	}
}
