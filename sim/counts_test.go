package sim

import "testing"

// TestAJobsCountsCarryAcrossASchedulerThatRelearnedIt: a scheduler
// restarted without a journal counts a re-learned job's preemptions, run
// time and lost work from zero; the collector adds what the earlier one
// counted, so no total goes back (and the work lost to preemption is never
// negative, as a compare with kill-scheduler showed before).
func TestAJobsCountsCarryAcrossASchedulerThatRelearnedIt(t *testing.T) {
	var k jobCounts
	steps := []struct {
		preemptions       int
		runS, lostS       float64
		wantP             int
		wantRun, wantLost float64
	}{
		{0, 0, 0, 0, 0, 0},
		{1, 100, 30, 1, 100, 30},
		{2, 200, 50, 2, 200, 50},
		{0, 0, 0, 2, 200, 50},   // a restarted scheduler re-learned it
		{0, 40, 0, 2, 240, 50},  // and counts afresh
		{1, 60, 10, 3, 260, 60}, // a preemption under the new one
		{0, 0, 0, 3, 260, 60},   // restarted again
	}
	for i, st := range steps {
		p, run, lost := k.total(st.preemptions, st.runS, st.lostS)
		if p != st.wantP || run != st.wantRun || lost != st.wantLost {
			t.Fatalf("step %d: totals %d %g %g, want %d %g %g", i, p, run, lost, st.wantP, st.wantRun, st.wantLost)
		}
	}
}
