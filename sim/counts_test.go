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

// TestASettlingSampleIsNotASample (issue 45 item 4): a metrics sample a
// restarted scheduler takes while it re-learns the cluster (settling:
// its utilisation and allocation count only the GPUs read so far) is
// left out of the series, which would otherwise plunge for one sample.
func TestASettlingSampleIsNotASample(t *testing.T) {
	c := newCollector(Epoch)
	for _, body := range []string{
		`{"simtime":"2026-01-01T00:01:00Z","data":{"util_mean":60,"allocation":0.5}}`,
		`{"simtime":"2026-01-01T00:02:00Z","data":{"util_mean":0,"allocation":0,"settling":true,"gpus_unknown":3}}`,
		`{"simtime":"2026-01-01T00:03:00Z","data":{"util_mean":61,"allocation":0.5}}`,
	} {
		c.fold(true, []byte(body))
	}
	if len(c.samples) != 2 || c.samples[0].UtilMean != 60 || c.samples[1].UtilMean != 61 {
		t.Fatalf("samples %+v: want the two settled ones", c.samples)
	}
}
