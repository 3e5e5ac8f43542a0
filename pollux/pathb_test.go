package pollux

import (
	"math"
	"path/filepath"
	"slices"
	"testing"
)

// TestTheInterpolationNearAppendixB: the interpolation that answers Path-B
// queries outside Appendix B (pathb.go), asked every query the table
// holds, lands near the reference's values (measured: median 0.7 %, 90th
// percentile 2.7 %, largest 12.7 % off in step time over 769 queries), and
// a run that has to use it says so job by job.
func TestTheInterpolationNearAppendixB(t *testing.T) {
	m := loadModel(t)
	var off []float64
	for _, app := range m.Apps {
		for k, v := range app.pathB {
			st, err := app.points.approximate(k[0], k[1], k[2])
			if err != nil {
				t.Fatal(err)
			}
			off = append(off, math.Abs(st.Step-v[0])/v[0])
		}
	}
	slices.Sort(off)
	if median, worst := off[len(off)/2], off[len(off)-1]; median > 0.01 || worst > 0.15 {
		t.Errorf("interpolated step times off the table by %.3f (median), %.3f (largest)", median, worst)
	}
	// Workload 6 at load 1.0 without the table: the jobs that crossed an
	// interpolated shape are marked; the average stays within 1 %
	// (measured +0.15 %: 142 of 160 JCTs equal).
	specs, err := ReadWorkload(filepath.Join(LoadFolder(m.Dir, 1), "workload-6.csv"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(m.WithoutAppendixB(), specs, Reference, NewTiresias())
	if err != nil {
		t.Fatal(err)
	}
	approx, sum := 0, 0
	for _, j := range res.Jobs {
		sum += j.JCT()
		if j.Approximate > 0 {
			approx++
		}
	}
	if avg := float64(sum) / float64(len(specs)); approx == 0 || math.Abs(avg/3469.69375-1) > 0.01 {
		t.Errorf("without Appendix B: %d jobs marked approximate, average JCT %v (published 3469.69375)", approx, avg)
	}
}
