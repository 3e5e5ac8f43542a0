package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpusched/gpusched/model"
)

// scenario is a data-file test (testdata/scenarios/*.json): a cluster, a
// policy, jobs with their submit_at (the JSON-lines trace format) and the
// outcome expected per job, in simulated seconds. The virtual clock makes
// those times exact.
type scenario struct {
	About        string  `json:"about"`
	GPUs         string  `json:"gpus"`
	Policy       string  `json:"policy"`
	Interference float64 `json:"interference"`
	// Oversubscribe is the scheduler's ratio (1 when omitted).
	Oversubscribe float64           `json:"oversubscribe"`
	Jobs          []json.RawMessage `json:"jobs"`
	Expect        map[string]struct {
		Start, End  *float64
		Preemptions *int
		Slowdown    *float64
		LostWorkS   *float64 `json:"lost_work_s"`
	} `json:"expect"`
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var sc scenario
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&sc); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			shape, err := model.ParseGPUs(sc.GPUs)
			if err != nil {
				t.Fatal(err)
			}
			arrivals, err := ParseJobLines(bytes.NewReader(bytes.Join(rawLines(sc.Jobs), []byte("\n"))), f)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := Run(ctx, Config{Shape: shape, Policy: sc.Policy, Seed: 1, Arrivals: arrivals,
				Interference: sc.Interference, Oversubscribe: sc.Oversubscribe, Drain: 48 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]JobResult{}
			for _, j := range res.Jobs {
				got[j.Name] = j
			}
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-3 }
			for name, want := range sc.Expect {
				j, ok := got[name]
				if !ok {
					t.Fatalf("no job %q in the results", name)
				}
				if want.Start != nil && (!j.Started || !near(j.Start, *want.Start)) {
					t.Errorf("%s started at %v (started=%v), want %v", name, j.Start, j.Started, *want.Start)
				}
				if want.End != nil && (!j.Completed() || !near(j.End, *want.End)) {
					t.Errorf("%s ended at %v (%s), want completed at %v", name, j.End, j.State, *want.End)
				}
				if want.Preemptions != nil && j.Preemptions != *want.Preemptions {
					t.Errorf("%s preempted %d times, want %d", name, j.Preemptions, *want.Preemptions)
				}
				if want.Slowdown != nil && !near(j.Slowdown, *want.Slowdown) {
					t.Errorf("%s slowdown %v, want %v", name, j.Slowdown, *want.Slowdown)
				}
				if want.LostWorkS != nil && !near(j.LostWorkS, *want.LostWorkS) {
					t.Errorf("%s lost %v s of work, want %v", name, j.LostWorkS, *want.LostWorkS)
				}
			}
			if t.Failed() {
				t.Logf("%s\n%+v", sc.About, res.Jobs)
			}
		})
	}
}

func rawLines(jobs []json.RawMessage) [][]byte {
	out := make([][]byte, len(jobs))
	for i, j := range jobs {
		var compact bytes.Buffer
		json.Compact(&compact, j)
		out[i] = compact.Bytes()
	}
	return out
}
