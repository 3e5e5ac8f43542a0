package sim

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/chaos"
	"github.com/gpusched/gpusched/internal/tracedir"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/openb"
	"github.com/gpusched/gpusched/replay"
)

func referenceShape(t testing.TB) model.Shape {
	shape, err := model.ParseGPUs(model.DefaultGPUs)
	if err != nil {
		t.Fatal(err)
	}
	return shape
}

func runOnce(t *testing.T, policy string, hours float64) (*Result, []byte) {
	t.Helper()
	return runConfig(t, Config{Shape: referenceShape(t), Policy: policy, Seed: 7, Rate: 6, Hours: hours,
		Interference: model.DefaultInterference})
}

// runConfig runs cfg and returns its result and its per-job CSV.
func runConfig(t *testing.T, cfg Config) (*Result, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteJobs(&b, res.Jobs); err != nil {
		t.Fatal(err)
	}
	return res, b.Bytes()
}

// TestSameSeedSameResults runs one seeded day twice — the second time on a
// single processor, so goroutines interleave quite differently — and
// requires the same per-job CSV, byte for byte, and the same metrics over time.
func TestSameSeedSameResults(t *testing.T) {
	a, csvA := runOnce(t, "binpack", 24)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	b, csvB := runOnce(t, "binpack", 24)
	if len(a.Jobs) < 100 {
		t.Fatalf("only %d jobs in a simulated day at 6 an hour", len(a.Jobs))
	}
	if !bytes.Equal(csvA, csvB) {
		t.Fatalf("the same seed gave different per-job results:\n%s\n----\n%s", firstDiff(csvA, csvB), "")
	}
	if len(a.Series) != len(b.Series) {
		t.Fatalf("%d samples, then %d", len(a.Series), len(b.Series))
	}
	for i := range a.Series {
		if a.Series[i] != b.Series[i] {
			t.Fatalf("sample %d differs: %+v vs %+v", i, a.Series[i], b.Series[i])
		}
	}
	if a.Final != b.Final {
		t.Fatalf("final metrics differ: %+v vs %+v", a.Final, b.Final)
	}
	s := Summarize(a)
	if s.Completed != s.Submitted-s.Rejected || s.Unended != 0 {
		t.Fatalf("not every job ended: %+v", s)
	}
	t.Logf("%d jobs, %d completed, %d preemptions, %s simulated in %s wall (%d instants)",
		s.Submitted, s.Completed, s.Preemptions, a.Length, a.Wall, a.Instants)
}

// TestABusyRunRepeatsAcrossSettlingOrders: seed 2 of the generated mix
// for 72 h under fifo, three times (once on one processor) — a run where
// placements, preemptions and head-of-line holds meet at one instant.
// Before a pass waiting for answers went on only at the settled instant,
// two of three runs of this differed (a hold on gpu-7 or on gpu-6,
// depending on whether a reply or a GPU event came first).
func TestABusyRunRepeatsAcrossSettlingOrders(t *testing.T) {
	cfg := Config{Shape: referenceShape(t), Policy: "binpack", Queue: "fifo", Seed: 2, Rate: 6, Hours: 72,
		Interference: model.DefaultInterference}
	_, first := runConfig(t, cfg)
	for i := range 2 {
		func() {
			if i == 1 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			}
			if _, again := runConfig(t, cfg); !bytes.Equal(first, again) {
				t.Fatalf("run %d differs from the first:\n%s", i+2, firstDiff(first, again))
			}
		}()
	}
}

// TestKillsOnAVirtualClockRepeat: GPU kills drawn from the seed in
// simulated time (issue 23's first fault) give the same per-job results in
// every run of the seed, at GOMAXPROCS=1 too; the kills bite (GPUs die,
// running jobs are lost and placed again) and every job still completes.
func TestKillsOnAVirtualClockRepeat(t *testing.T) {
	first := runChaosTwice(t, "kill=4/h", Config{Shape: referenceShape(t), Policy: "binpack", Seed: 3, Rate: 6, Hours: 12,
		Interference: model.DefaultInterference})
	s := Summarize(first)
	if first.Final.GPUDeaths < 20 || first.Final.JobsLost == 0 || s.Completed != s.Submitted-s.Rejected || s.Unended != 0 {
		t.Fatalf("%d GPU deaths (about 48 drawn), %d jobs lost, %d of %d completed: want the kills to bite and every job to end",
			first.Final.GPUDeaths, first.Final.JobsLost, s.Completed, s.Submitted)
	}
	// What the faults cost, per fault and per job (issue 23 item 3).
	if s.Faults == 0 || s.Requeued < s.Faults || s.FaultGPUHours <= 0 || s.RecoveryMax < s.RecoveryMean || s.Requeued != first.Final.JobsLost {
		t.Fatalf("fault costs: %d faults, %d re-queued (the scheduler counted %d lost), %.2f GPU-hours lost, recovery mean %s max %s",
			s.Faults, s.Requeued, first.Final.JobsLost, s.FaultGPUHours, s.RecoveryMean, s.RecoveryMax)
	}
	var out bytes.Buffer
	if err := WriteColumns(&out, []Column{{Policy: "binpack", Runs: []Summary{s}}}); err != nil || !strings.Contains(out.String(), "work lost to faults GPU-hours") {
		t.Fatalf("the table lacks the fault rows (%v):\n%s", err, out.String())
	}
	t.Logf("%d GPU deaths, %d jobs lost, %d jobs completed; %d faults, %.2f GPU-hours lost to them, recovery mean %s max %s",
		first.Final.GPUDeaths, first.Final.JobsLost, s.Completed, s.Faults, s.FaultGPUHours, s.RecoveryMean, s.RecoveryMax)
}

// TestSchedulerKillsOnAVirtualClockRepeat (issue 23 item 1, kill-scheduler
// on the virtual clock): the scheduler is killed at instants drawn from the
// seed and restarted after a backoff of simulated time; its successor hears
// every node again at once (Host.Announce), takes the queue back from the
// run's memory journal and re-learns the running jobs. The same seed gives
// the same per-job results at any GOMAXPROCS; the cluster goes on placing
// jobs after each restart; no job is lost with a scheduler, every one
// completes; no count a job carries goes back across a restart (its lost
// work is never negative, its preemptions are not counted twice).
func TestSchedulerKillsOnAVirtualClockRepeat(t *testing.T) {
	cfg := Config{Shape: referenceShape(t), Policy: "binpack", Seed: 5, Rate: 6,
		Hours: 8, Drain: 24 * time.Hour, Interference: model.DefaultInterference}
	first := runChaosTwice(t, "kill-scheduler=2/h,kill=2/h", cfg)
	if first.Final.Incarnation < 6 {
		t.Fatalf("the scheduler is at incarnation %d after 8 simulated hours at 2 kills an hour: the kills did not bite", first.Final.Incarnation)
	}
	// Jobs submitted in the last hours of arrivals, long after the first
	// kills, still run and complete: the restarted schedulers place.
	late, preemptions := 0, 0
	for _, j := range first.Jobs {
		if j.State != "completed" {
			t.Errorf("job %s (%s) is %s at the end: every job must complete (the queue survives a kill in the memory journal)", j.Job, j.Name, j.State)
		}
		if j.Submit > 6*3600 && j.Ended && j.State == "completed" {
			late++
		}
		if j.LostWorkS < j.FaultLostWorkS-1e-9 || j.LostWorkS < 0 {
			t.Fatalf("job %s: lost work %.1f s, of it to faults %.1f s: a count went back across a restart", j.Job, j.LostWorkS, j.FaultLostWorkS)
		}
		preemptions += j.Preemptions
	}
	if preemptions != first.Final.Preemptions {
		t.Errorf("the jobs count %d preemptions, the cluster's totals %d: one was counted twice (or lost) across a restart", preemptions, first.Final.Preemptions)
	}
	if late == 0 {
		t.Fatal("no job submitted after 6 h completed: the restarted schedulers did not place")
	}
	if limit := time.Duration(cfg.Hours*float64(time.Hour)) + cfg.Drain; first.Length >= limit {
		t.Errorf("the run went on to its drain limit (%s): some job never ended", first.Length)
	}
	// Nothing lost with a scheduler: the table has no row for it.
	s := Summarize(first)
	var table bytes.Buffer
	if err := WriteColumns(&table, []Column{{Policy: "binpack", Runs: []Summary{s}}}); err != nil {
		t.Fatal(err)
	}
	if s.LostWithScheduler != 0 || strings.Contains(table.String(), "lost with a scheduler") {
		t.Errorf("%d jobs lost with a scheduler:\n%s", s.LostWithScheduler, table.String())
	}
	t.Logf("scheduler incarnation %d, %d jobs, %d submitted after 6 h completed; %s simulated",
		first.Final.Incarnation, len(first.Jobs), late, first.Length)
}

// runChaosTwice runs cfg with the monkey spec, then again on one
// processor, and requires the same per-job results; it returns the first.
func runChaosTwice(t *testing.T, spec string, cfg Config) *Result {
	t.Helper()
	ms, err := chaos.ParseMonkey(spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Chaos = &ms
	first, csvA := runConfig(t, cfg)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if _, csvB := runConfig(t, cfg); !bytes.Equal(csvA, csvB) {
		t.Fatalf("the same seed with %s gave different per-job results:\n%s", spec, firstDiff(csvA, csvB))
	}
	return first
}

func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return string(la[i]) + "\n" + string(lb[i])
		}
	}
	return "lengths differ"
}

// TestTimedOpenbStart replays the openb default trace in time on its
// 1,213-node cluster up to its 1,000th pod (about 120 days: most pods
// arrive late in the trace): every pod that arrives is accounted for, and
// the ones that end do so after they start.
func TestTimedOpenbStart(t *testing.T) {
	nodes, pods := tracedir.Default(t)
	shape, _ := openb.Shape(nodes)
	arrivals, err := PodArrivals(pods)
	if err != nil {
		t.Fatal(err)
	}
	horizon := arrivals[999].At
	arrived := 0
	for _, a := range arrivals {
		if a.At <= horizon {
			arrived++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Shape: shape, Policy: "fgd", Seed: 1, Arrivals: arrivals, Hours: horizon.Hours(),
		Drain: time.Hour, Sample: 24 * time.Hour, Workload: replay.Workload(pods), Interference: model.DefaultInterference})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != arrived || res.Submitted != arrived {
		t.Fatalf("%d pods arrive by the 1,000th; the run submitted %d and saw %d", arrived, res.Submitted, len(res.Jobs))
	}
	s := Summarize(res)
	for _, j := range res.Jobs {
		if j.Ended && j.Completed() && (!j.Started || j.End < j.Start) {
			t.Fatalf("pod %s ended before it started: %+v", j.Name, j)
		}
	}
	if s.Completed == 0 || s.Completed+s.Rejected+s.Unended != arrived {
		t.Fatalf("summary does not account for every pod: %+v", s)
	}
	t.Logf("%d pods: %d completed, %d still running after an hour's drain; %s wall", arrived, s.Completed, s.Unended, res.Wall)
}

// TestRoundsRepeat: a time-sliced run (srtf order, a skip-fit round every
// simulated 10 minutes) gives the same per-job results twice, at
// GOMAXPROCS=1 too, and its rounds do stop running jobs (with priority
// preemption off, every preemption is a round's: none without rounds).
func TestRoundsRepeat(t *testing.T) {
	cfg := Config{Shape: referenceShape(t), Policy: "binpack", Queue: "srtf", Seed: 7, Rate: 6, Hours: 12,
		Interference: model.DefaultInterference, RoundEvery: 10 * time.Minute, Preempt: "none"}
	a, csvA := runConfig(t, cfg)
	func() {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		_, csvB := runConfig(t, cfg)
		if !bytes.Equal(csvA, csvB) {
			t.Fatalf("the same seed with rounds gave different per-job results:\n%s", firstDiff(csvA, csvB))
		}
	}()
	cfg.RoundEvery = 0
	plain, _ := runConfig(t, cfg)
	sa, sp := Summarize(a), Summarize(plain)
	if sa.Unended != 0 || sa.Completed != sa.Submitted-sa.Rejected {
		t.Fatalf("not every job ended with rounds: %+v", sa)
	}
	if sa.Preemptions == 0 || sp.Preemptions != 0 {
		t.Fatalf("%d preemptions with rounds, %d without: want some, and none", sa.Preemptions, sp.Preemptions)
	}
	t.Logf("with rounds: %d jobs, %d preemptions; without: %d preemptions", sa.Submitted, sa.Preemptions, sp.Preemptions)
}
