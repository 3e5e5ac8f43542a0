package simtest

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/sim"
)

// TestSeedsKeepEveryInvariant runs a few drawn seeds (clusters of 1–64
// GPUs, gangs, CPU-only and sharing jobs, GPU kills) with every event
// checked in-process: none may break an invariant. `cluster simtest
// --seeds 1-1000` is the long form.
func TestSeedsKeepEveryInvariant(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	faults, schedulerKills := 0, 0
	for seed := uint64(1); seed <= 4; seed++ {
		o := Run(ctx, Draw(seed, 4))
		if o.Err != nil {
			t.Fatalf("%s: %v", o.Case, o.Err)
		}
		if len(o.Problems) > 0 {
			t.Errorf("%s:\n  %s\n  history:\n    %s\n  replay: %s", o.Case, strings.Join(o.Problems, "\n  "), strings.Join(o.History, "\n    "),
				ReplayCommand(seed, Options{Hours: 4}))
		}
		if o.Events == 0 || o.Summary.Submitted == 0 {
			t.Errorf("%s: %d events checked, %d jobs: the checker saw nothing", o.Case, o.Events, o.Summary.Submitted)
		}
		faults += o.Summary.Faults
		schedulerKills += o.SchedulerKills
	}
	if faults == 0 {
		t.Error("no seed's faults took a job down: the faults did not bite")
	}
	if schedulerKills == 0 {
		t.Error("no seed killed its scheduler")
	}
}

// TestASeedReplaysExactly: the same seed draws the same case and gives
// the same outcome. Seed 6 over 4 hours kills its scheduler (6 times):
// its restarts replay too, although a restarted scheduler's reads of its
// GPUs are answered in any order.
func TestASeedReplaysExactly(t *testing.T) {
	a, b := Draw(6, 4), Draw(6, 4)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("the same seed drew two cases:\n%s\n%s", a, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	x, y := Run(ctx, a), Run(ctx, b)
	x.Summary.Wall, y.Summary.Wall = 0, 0
	if x.Err != nil || y.Err != nil || !reflect.DeepEqual(x.Summary, y.Summary) || x.Events != y.Events || x.SchedulerKills != y.SchedulerKills {
		t.Fatalf("two runs of seed 6 differ:\n%+v (%d events, %d scheduler kills, %v)\n%+v (%d events, %d scheduler kills, %v)",
			x.Summary, x.Events, x.SchedulerKills, x.Err, y.Summary, y.Events, y.SchedulerKills, y.Err)
	}
	if x.SchedulerKills == 0 {
		t.Fatal("seed 6 did not kill its scheduler: the replay of restarts was not tried")
	}
}

// TestAProblemNamesItsHistory: a problem naming a job gets that job's
// events, and only those.
func TestAProblemNamesItsHistory(t *testing.T) {
	id := "0b6c2f4e-1111-2222-3333-444455556666"
	log := []string{"a job.submitted " + id, "b job.submitted other", "c gpu.status gpu-3", "d job.started " + id}
	h := history(log, "lifecycle: job "+id+" completed twice")
	if len(h) != 2 || !strings.HasPrefix(h[0], "a ") || !strings.HasPrefix(h[1], "d ") {
		t.Fatalf("history %q, want the job's two events", h)
	}
}

// TestADrawnCaseGivesItsLargestGPUsNoMoreThanTheyCanFinish: seed 391
// draws one A100 80GB beside 49 smaller GPUs and a day of the mix; the
// jobs too large for the others (over 32 GB) were a month of work in line
// for that one GPU, and 7 never ended in the 30 days of drain. The drawn
// arrivals now keep that GPU's work within its hours plus the budget.
func TestADrawnCaseGivesItsLargestGPUsNoMoreThanTheyCanFinish(t *testing.T) {
	c := Draw(391, 24)
	var bigWork float64
	for _, a := range c.Arrivals {
		var req events.SubmitRequest
		if err := json.Unmarshal(a.Body, &req); err != nil {
			t.Fatal(err)
		}
		spec, fe := req.Job()
		if fe != nil {
			t.Fatal(fe)
		}
		if spec.GPUs > 0 && spec.VRAM > 32<<30 {
			bigWork += spec.Duration.Hours() * float64(spec.GPUs)
		}
	}
	if limit := 24.0 + feasibleBudget; bigWork == 0 || bigWork > limit {
		t.Fatalf("%s: %.0f GPU-hours of jobs over 32 GB for its one A100 80GB, want some and at most %.0f", c.GPUs, bigWork, limit)
	}
}

// TestAnUnendedJobIsNamed: the problem "accepted jobs never ended" names
// them (and their last state), so that the seed's history shows their
// events. Before, it named none and the history was empty (seed 4100).
func TestAnUnendedJobIsNamed(t *testing.T) {
	jobs := []sim.JobResult{{Job: "a", State: events.JobCompleted}, {Job: "b", State: events.JobQueued}, {Job: "c", State: events.JobRejected}, {Job: "d", State: events.JobRunning}}
	if got, want := unended(jobs), "b (queued), d (running)"; got != want {
		t.Fatalf("unended: %q, want %q", got, want)
	}
}

// aaaNewcomer is a placement policy registered by a test, named to sort
// first: dealt from the registry, it would shift every seed's policy.
type aaaNewcomer struct{ policy.GPURanker }

func (aaaNewcomer) Name() string { return "aaa-newcomer" }

// TestANewPolicyRedealsNoSeed: the cases are dealt from simtest's own
// lists, every name of which is registered; registering another policy
// and queue order changes no seed's case.
func TestANewPolicyRedealsNoSeed(t *testing.T) {
	for _, name := range Placements {
		if _, err := policy.Lookup[policy.Policy](name); err != nil {
			t.Errorf("Placements: %v", err)
		}
	}
	for _, name := range Queues {
		if _, err := policy.Lookup[policy.QueueSort](name); err != nil {
			t.Errorf("Queues: %v", err)
		}
	}
	var before []string
	for seed := uint64(1); seed <= 50; seed++ {
		before = append(before, Draw(seed, 1).String())
	}
	bp, _ := policy.Lookup[policy.Policy]("binpack")
	policy.Register[policy.Policy](aaaNewcomer{bp.(policy.GPURanker)})
	fifo, _ := policy.Lookup[policy.QueueSort]("fifo")
	policy.Register[policy.QueueSort](aaaQueue{fifo})
	for seed := uint64(1); seed <= 50; seed++ {
		if got := Draw(seed, 1).String(); got != before[seed-1] {
			t.Fatalf("seed %d re-dealt by a new policy: %s, was %s", seed, got, before[seed-1])
		}
	}
}

// aaaQueue is a queue order registered by a test, named to sort first
// after the default.
type aaaQueue struct{ policy.QueueSort }

func (aaaQueue) Name() string { return "aaa-queue" }
