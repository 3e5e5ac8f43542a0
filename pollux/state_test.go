package pollux

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpusched/gpusched/model"
)

// travelling is a policy that, before deciding, sends every active job
// through its wire state and back (JSON, as between the scheduler and the
// GPU actors): a run under it must equal the run without.
type travelling struct {
	Policy
	m *Model
	t *testing.T
}

func (p travelling) Allocate(t int, active []*Job, c Cluster, current Alloc) (Alloc, error) {
	for _, j := range active {
		back, err := p.m.Restore(j.Spec, travelled(p.t, j.State()))
		if err != nil {
			p.t.Fatal(err)
		}
		*j = *back
	}
	return p.Policy.Allocate(t, active, c, current)
}

// travelled is st sent as JSON and read back, as between the scheduler
// and the GPU actors.
func travelled(t *testing.T, st model.TrainingState) model.TrainingState {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back model.TrainingState
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// workload6 is the model and workload 6 at load 1.0.
func workload6(t *testing.T) (*Model, []Spec) {
	t.Helper()
	m := loadModel(t)
	specs, err := ReadWorkload(filepath.Join(LoadFolder(m.Dir, 1), "workload-6.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return m, specs
}

// offline is Run of specs under the policy named pol.
func offline(t *testing.T, m *Model, specs []Spec, pol string) *Result {
	t.Helper()
	p, _ := NewPolicy(pol)
	res, err := Run(m, specs, Reference, p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestAJobsStateTravelsExactly runs workload 6 (load 1.0) under Tiresias
// and Optimus with every active job rebuilt from its JSON state before
// each interval's decision: every job's JCT, restarts and service equal
// the run's without (a field State left out, or a float not carried
// exactly, would change them).
func TestAJobsStateTravelsExactly(t *testing.T) {
	m, specs := workload6(t)
	for _, pol := range []string{"tiresias", "optimus"} {
		want := offline(t, m, specs, pol)
		p, _ := NewPolicy(pol)
		got, err := Run(m, specs, Reference, travelling{Policy: p, m: m, t: t})
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range got.Jobs {
			w := want.Jobs[i]
			if j.State().ClockS != w.State().ClockS || j.JCT() != w.JCT() || j.Restarts != w.Restarts || j.Service != w.Service || j.Progress != w.Progress {
				t.Errorf("%s %s: travelled %+v, stayed %+v", pol, j.Name, j.State(), w.State())
			}
		}
	}
}

// TestLookaheadIsWhereSteppingEnds: a placed job's Lookahead is the second
// stepping it interval by interval completes it, and leaves it unchanged.
func TestLookaheadIsWhereSteppingEnds(t *testing.T) {
	m := loadModel(t)
	for _, s := range []Spec{{Name: "c", App: "cifar10", Replicas: 2, Batch: 256}, {Name: "n", App: "ncf", Replicas: 1, Batch: 32768},
		{Name: "b", App: "bert", Replicas: 6, Batch: 384}} {
		j, err := m.NewJob(s)
		if err != nil {
			t.Fatal(err)
		}
		j.Advance(120) // waits two intervals
		j.Reallocate([]int{min(4, s.Replicas), s.Replicas - min(4, s.Replicas)}[:1+(s.Replicas-1)/4])
		before := j.State()
		done, _, ok, err := j.Lookahead(60, 1_000_000)
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", s.Name, ok, err)
		}
		if after := j.State(); !slices.Equal(after.Placement, before.Placement) || after.Progress != before.Progress || after.ClockS != before.ClockS {
			t.Fatalf("%s: Lookahead moved the job: %+v → %+v", s.Name, before, after)
		}
		for !j.Done {
			if err := j.Advance(60); err != nil {
				t.Fatal(err)
			}
		}
		if j.Completion != done {
			t.Errorf("%s: Lookahead said %d s, stepping ended at %d s", s.Name, done, j.Completion)
		}
		if _, _, ok, _ := j.Lookahead(60, 0); ok {
			t.Errorf("%s: no interval, yet a completion", s.Name)
		}
	}
}

// TestRoundsDrivenAsTheLiveClusterDrivesThem drives Rounds the way the
// live cluster does: jobs added as they are submitted, a placed job
// stepped apart from the scheduler's copy (by its GPUs, from the state the
// placement handed them) and its state brought back over JSON before each
// decision, an unplaced job's clock set to the round's. Every job's JCT,
// restarts and service equal Run's, Tiresias and Optimus on workload 6.
func TestRoundsDrivenAsTheLiveClusterDrivesThem(t *testing.T) {
	m, specs := workload6(t)
	for _, pol := range []string{"tiresias", "optimus"} {
		want := offline(t, m, specs, pol)
		p, _ := NewPolicy(pol)
		r := NewRounds(m, Reference, p)
		gpus := map[string]*Job{} // the jobs as their GPUs step them
		next, left := 0, len(specs)
		for t0 := Reference.Interval; left > 0; t0 += Reference.Interval {
			for _, g := range gpus {
				if err := g.Advance(Reference.Interval); err != nil {
					t.Fatal(err)
				}
			}
			for next < len(specs) && specs[next].Submit <= t0 {
				if _, err := r.Add(specs[next]); err != nil {
					t.Fatal(err)
				}
				next++
			}
			left = 0
			for _, j := range r.Jobs() {
				if g, ok := gpus[j.Name]; ok {
					back, err := m.Restore(j.Spec, travelled(t, g.State()))
					if err != nil {
						t.Fatal(err)
					}
					*j = *back
					if j.Done {
						delete(gpus, j.Name)
					}
				} else if !j.Done {
					j.Clock = t0
				}
				if !j.Done {
					left++
				}
			}
			left += len(specs) - next
			changed, err := r.Decide(t0)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range changed {
				delete(gpus, j.Name)
				if len(j.Placement) > 0 {
					g, err := m.Restore(j.Spec, travelled(t, j.State()))
					if err != nil {
						t.Fatal(err)
					}
					gpus[j.Name] = g
				}
			}
		}
		if len(r.Jobs()) != len(specs) {
			t.Fatalf("%s: %d of %d jobs added", pol, len(r.Jobs()), len(specs))
		}
		for i, j := range r.Jobs() {
			w := want.Jobs[i]
			if !j.Done || j.JCT() != w.JCT() || j.Restarts != w.Restarts || j.Service != w.Service {
				t.Errorf("%s %s: driven live JCT %d, restarts %d, service %d; Run %d, %d, %d", pol, j.Name, j.JCT(), j.Restarts, j.Service, w.JCT(), w.Restarts, w.Service)
			}
		}
	}
}
