package gavel

import (
	"context"
	"math"
	"testing"

	"github.com/gpusched/gpusched/internal/tracedir"
)

// TestEveryReferenceRunJobForJob runs every reference run of the Gavel
// data folder and compares each job's draw and JCT, the average JCT and
// the utilisation with the reference simulator's.
func TestEveryReferenceRunJobForJob(t *testing.T) {
	dir := tracedir.Gavel(t)
	data, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	names, err := ReferenceNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := ParseRunName(name)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := ReadReference(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), data, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Jobs) != len(ref.Jobs) {
				t.Errorf("%d jobs generated, the reference %d", len(res.Jobs), len(ref.Jobs))
			}
			for i := range min(len(res.Jobs), len(ref.Jobs)) {
				got, want := res.Jobs[i], ref.Jobs[i]
				// The draws are the reference's (CPython's generators,
				// pow and log correctly rounded): to the bit but where
				// glibc's pow or log is not correctly rounded, an ulp off.
				if got.Type != want.Type || got.Scale != want.Scale || !withinUlps(got.TotalSteps, want.TotalSteps) ||
					!withinUlps(got.Duration, want.Duration) || !withinUlps(got.Arrival, want.Arrival) {
					t.Fatalf("job %d drawn as %s ×%d, %v steps (%v s) at %v s; the reference %s ×%d, %v steps (%v s) at %v s", i,
						got.Type, got.Scale, got.TotalSteps, got.Duration, got.Arrival, want.Type, want.Scale, want.TotalSteps, want.Duration, want.Arrival)
				}
				if got.InWindow != want.InWindow {
					t.Errorf("job %d in the window: %v, the reference %v", i, got.InWindow, want.InWindow)
				}
			}
			if c := Compare(res, ref); c.Equal != len(ref.Jobs) {
				t.Errorf("%d of %d JCTs equal; the first that differs, job %d: %v, the reference %v", c.Equal, len(ref.Jobs),
					c.FirstDiffer, res.Jobs[c.FirstDiffer].JCT, ref.Jobs[c.FirstDiffer].JCT)
			}
			if math.Abs(res.AverageJCT/ref.AverageJCT-1) > 1e-9 {
				t.Errorf("average JCT %v, the reference %v", res.AverageJCT, ref.AverageJCT)
			}
			if math.Abs(res.Utilization/ref.Utilization-1) > 1e-9 {
				t.Errorf("utilisation %v, the reference %v", res.Utilization, ref.Utilization)
			}
		})
	}
}

// withinUlps reports whether a and b are within a few units in the last
// place of each other.
func withinUlps(a, b float64) bool { return math.Abs(a-b) <= 1e-15*math.Abs(b) }
