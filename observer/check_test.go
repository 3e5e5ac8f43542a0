package observer

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// feeder builds events for a Checker, one source sequence at a time.
type feeder struct {
	t   *testing.T
	c   *Checker
	seq map[string]uint64
	now time.Time
}

func newFeeder(t *testing.T) *feeder {
	return &feeder{t: t, c: NewChecker(), seq: map[string]uint64{}, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (f *feeder) emit(source, typ string, data any) {
	f.t.Helper()
	f.seq[source]++
	f.now = f.now.Add(time.Millisecond)
	b, err := json.Marshal(data)
	if err != nil {
		f.t.Fatal(err)
	}
	f.c.Feed("gpusched.evt.x", &events.Decoded{SpecVersion: "1.0", Source: source, Type: "gpusched." + typ,
		Time: f.now, Seq: f.seq[source], Data: b})
}

func gpuStatus(node, gpu string, inc int, jobs ...events.GPUJob) events.GPUStatus {
	return events.GPUStatus{GPU: gpu, Node: node, Incarnation: inc, VRAMTotal: 100, Jobs: jobs}
}

func running(id string, offset, size int64) events.GPUJob {
	return events.GPUJob{JobID: id, State: "running", Offset: offset, VRAM: size}
}

func kinds(vs []Violation) string {
	var k []string
	for _, v := range vs {
		k = append(k, v.Kind)
	}
	return strings.Join(k, ",")
}

func TestCheckerVRAM(t *testing.T) {
	f := newFeeder(t)
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1, running("a", 0, 60), running("b", 50, 40)))
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1, running("a", 0, 60), running("b", 60, 50)))
	if got := kinds(f.c.Violations()); got != "vram,vram,vram" {
		t.Fatalf("violations %q, want an overlap, then one past the end and over capacity", got)
	}
}

// TestCheckerShare: a GPU's jobs may hold all of its compute between
// them (1000 thousandths), not more.
func TestCheckerShare(t *testing.T) {
	f := newFeeder(t)
	share := func(id string, offset int64, milli int) events.GPUJob {
		j := running(id, offset, 10)
		j.Milli = milli
		return j
	}
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1, share("a", 0, 500), share("b", 10, 500)))
	if got := kinds(f.c.Violations()); got != "" {
		t.Fatalf("violations %q, want none: two halves make a GPU", got)
	}
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1, share("a", 0, 500), share("b", 10, 500), share("c", 20, 250)))
	if got := kinds(f.c.Violations()); got != "share" {
		t.Fatalf("violations %q, want 1250/1000 of a GPU held", got)
	}
}

func TestCheckerDoubleRun(t *testing.T) {
	f := newFeeder(t)
	f.emit("/scheduler/1", "job.submitted", events.JobInfo{JobID: "gang", GPUs: 2})
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1, running("gang", 0, 10)))
	f.emit("/gpu/n0/g1/1", "gpu.status", gpuStatus("n0", "g1", 1, running("gang", 0, 10)))
	if v := f.c.Violations(); len(v) != 0 {
		t.Fatalf("a 2-GPU gang on one node is one place: %v", v)
	}
	f.emit("/gpu/n1/g2/1", "gpu.status", gpuStatus("n1", "g2", 1, running("solo", 0, 10)))
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1, running("solo", 20, 10)))
	if got := kinds(f.c.Violations()); got != "double-run" {
		t.Fatalf("violations %q, want one double run across nodes", got)
	}
	// A GPU declared dead no longer runs anything.
	f2 := newFeeder(t)
	f2.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1, running("j", 0, 10)))
	f2.emit("/scheduler/1", "gpu.down", gpuStatus("n0", "g0", 1))
	f2.emit("/gpu/n1/g5/1", "gpu.status", gpuStatus("n1", "g5", 1, running("j", 0, 10)))
	if v := f2.c.Violations(); len(v) != 0 {
		t.Fatalf("re-placed after the verdict: %v", v)
	}
	// But a dead incarnation speaking after the verdict ran past its lease.
	f2.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1, running("j", 0, 10)))
	if got := kinds(f2.c.Violations()); got != "ran-after-death" {
		t.Fatalf("violations %q, want ran-after-death", got)
	}
}

func TestCheckerSeqAndDrop(t *testing.T) {
	f := newFeeder(t)
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1))
	f.seq["/gpu/n0/g0/1"] += 2 // two events lost
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1))
	if got := kinds(f.c.Violations()); got != "seq-gap" {
		t.Fatalf("violations %q, want a seq gap", got)
	}
	f.emit("/chaos/1", "chaos.drop", events.ChaosEvent{Action: "drop", GPU: "g0", Node: "n0", Drop: 0.5})
	f.seq["/gpu/n0/g0/1"] += 3
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1))
	if s := f.c.Summary(); len(s.Violations) != 1 || s.ExpectedGaps != 3 {
		t.Fatalf("after a drop chaos: %d violations, %d expected gaps; want the 3 counted, not violated", len(s.Violations), s.ExpectedGaps)
	}
	// A crash's gpu.down after events the actor held back (a partition's
	// outbox, a delay line) that died with it: expected, not a violation.
	f.seq["/gpu/n1/g1/1"] = 0
	f.emit("/gpu/n1/g1/1", "gpu.status", gpuStatus("n1", "g1", 1))
	f.seq["/gpu/n1/g1/1"] += 2
	f.emit("/gpu/n1/g1/1", "gpu.down", gpuStatus("n1", "g1", 1))
	if s := f.c.Summary(); len(s.Violations) != 1 || s.ExpectedGaps != 5 {
		t.Fatalf("a gap before a crash's down: %d violations, %d expected gaps; want 1 and 5", len(s.Violations), s.ExpectedGaps)
	}
	// A restart starts a new source at 1: not a gap.
	f.emit("/gpu/n0/g0/2", "gpu.up", gpuStatus("n0", "g0", 2))
	if n := len(f.c.Violations()); n != 1 {
		t.Fatalf("a new incarnation was taken for a gap")
	}
}

// TestAGPUWhoseEventsAreDroppedIsJudgedByItsNextStatus: a job runs on g0,
// a drop chaos drops g0's events, the status of its preemption is lost,
// and the job starts on g1. Not a double run: what the checker last heard
// from g0 is stale. Had g0 really kept running it, its next status says so,
// and that is one. (Drawn into simtest on a virtual clock, the drops made
// false double runs: seed 29 of `cluster simtest` with drops.)
func TestAGPUWhoseEventsAreDroppedIsJudgedByItsNextStatus(t *testing.T) {
	f := newFeeder(t)
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1, running("j", 0, 10)))
	f.emit("/chaos/1", "chaos.drop", events.ChaosEvent{Action: "drop", GPU: "g0", Node: "n0", Drop: 0.5})
	f.seq["/gpu/n0/g0/1"]++ // the preemption's status, dropped
	f.emit("/gpu/n1/g1/1", "gpu.status", gpuStatus("n1", "g1", 1, running("j", 0, 10)))
	if v := f.c.Violations(); len(v) != 0 {
		t.Fatalf("a stale list of a GPU whose events are dropped judged a double run: %v", v)
	}
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1, running("j", 0, 10)))
	if got := kinds(f.c.Violations()); got != "double-run" {
		t.Fatalf("violations %q: g0 says it still runs the job g1 runs, want a double run", got)
	}
}

func TestCheckerLifecycleAndLostInQueue(t *testing.T) {
	f := newFeeder(t)
	for _, typ := range []string{"submitted", "queued", "placed", "started", "completed", "completed"} {
		f.emit("/scheduler/1", "job."+typ, events.JobInfo{JobID: "a"})
	}
	if got := kinds(f.c.Violations()); got != "lifecycle" {
		t.Fatalf("violations %q, want a second terminal state", got)
	}
	f.emit("/scheduler/1", "job.submitted", events.JobInfo{JobID: "q"})
	f.emit("/scheduler/1", "job.queued", events.JobInfo{JobID: "q"})
	f.emit("/scheduler/1", "job.submitted", events.JobInfo{JobID: "r"})
	f.emit("/scheduler/1", "job.started", events.JobInfo{JobID: "r"})
	f.emit("/supervisor/scheduler", "sched.down", events.SchedLifecycle{Incarnation: 1})
	s := f.c.Summary()
	if s.LostInQueue != 1 || s.Running != 1 || s.Completed != 1 {
		t.Fatalf("lost-in-queue %d running %d completed %d; want the queued job lost, the running one running", s.LostInQueue, s.Running, s.Completed)
	}
}

// TestCheckerPriority: a job preempted for one of higher priority is
// fine; one preempted for a job of its own priority or lower is a
// violation (a restarted scheduler once took jobs it read back for low
// priority ones); a round's preemption names no preemptor and is not
// judged so.
func TestCheckerPriority(t *testing.T) {
	f := newFeeder(t)
	for id, p := range map[string]model.Priority{"low": model.PriorityLow, "medium": model.PriorityMedium, "high": model.PriorityHigh} {
		f.emit("/scheduler/1", "job.submitted", events.JobInfo{JobID: id, Priority: p})
		f.emit("/scheduler/1", "job.started", events.JobInfo{JobID: id, Priority: p})
	}
	f.emit("/scheduler/1", "job.preempted", events.JobInfo{JobID: "low", Priority: model.PriorityLow, Preemptor: "medium"})
	f.emit("/scheduler/1", "job.preempted", events.JobInfo{JobID: "medium", Priority: model.PriorityMedium})
	if got := kinds(f.c.Violations()); got != "" {
		t.Fatalf("violations %q, want none", got)
	}
	f.emit("/scheduler/1", "job.preempted", events.JobInfo{JobID: "high", Priority: model.PriorityHigh, Preemptor: "medium"})
	if got := kinds(f.c.Violations()); got != "priority" {
		t.Fatalf("violations %q, want a high job preempted for a medium one", got)
	}
}

// TestCheckerResyncsWhenItFellBehind (issue 21 item 8): a checker that
// missed events (its connection dropped) resynchronises from a snapshot:
// the gaps before each source's next event are counted as missed, not
// violations; a GPU's stale job list makes no false double run; a job
// gone from the snapshot ended unseen, not running forever.
// beforeFallingBehind feeds two running jobs, both on g0, and an idle g1.
func beforeFallingBehind(f *feeder) {
	for _, id := range []string{"a", "gone"} {
		f.emit("/scheduler/1", "job.submitted", events.JobInfo{JobID: id})
		f.emit("/scheduler/1", "job.started", events.JobInfo{JobID: id})
	}
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1, running("a", 0, 10), running("gone", 10, 10)))
	f.emit("/gpu/n1/g1/1", "gpu.status", gpuStatus("n1", "g1", 1))
}

func TestCheckerResyncsWhenItFellBehind(t *testing.T) {
	f := newFeeder(t)
	beforeFallingBehind(f)
	// Behind: meanwhile "gone" completed, "a" moved to g1, "new" came.
	f.seq["/scheduler/1"] += 9
	f.seq["/gpu/n0/g0/1"] += 4
	f.seq["/gpu/n1/g1/1"] += 2
	snap := &events.Snapshot{Pages: 1,
		GPUs:    []events.SnapshotGPU{{GPUStatus: gpuStatus("n0", "g0", 1)}, {GPUStatus: gpuStatus("n1", "g1", 1, running("a", 0, 10))}},
		Running: []events.JobInfo{{JobID: "a"}}, Queue: []events.JobInfo{{JobID: "new"}}}
	if line := f.c.Resync(snap); !strings.Contains(line, "1 jobs ended unseen") {
		t.Fatalf("resync says %q", line)
	}
	f.emit("/gpu/n1/g1/1", "gpu.status", gpuStatus("n1", "g1", 1, running("a", 0, 10)))
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1))
	f.emit("/scheduler/1", "job.completed", events.JobInfo{JobID: "a"})
	s := f.c.Summary()
	if len(s.Violations) != 0 || s.FellBehind != 1 || s.Missed != 15 || s.EndedUnseen != 1 || s.Running != 0 || s.Queued != 1 || s.Completed != 1 || s.Jobs != 3 {
		t.Fatalf("after the resync: violations %v, fell behind %d, missed %d, ended unseen %d, running %d, queued %d, completed %d, jobs %d",
			s.Violations, s.FellBehind, s.Missed, s.EndedUnseen, s.Running, s.Queued, s.Completed, s.Jobs)
	}
	// Without the resync the same history is full of false alarms.
	g := newFeeder(t)
	beforeFallingBehind(g)
	g.seq["/gpu/n1/g1/1"] += 2
	g.emit("/gpu/n1/g1/1", "gpu.status", gpuStatus("n1", "g1", 1, running("a", 0, 10)))
	if got := kinds(g.c.Violations()); !strings.Contains(got, "seq-gap") || !strings.Contains(got, "double-run") {
		t.Fatalf("without a resync: violations %q, want the gap and the false double run", got)
	}
}

// TestCheckerRestored: a job first heard of in a restarted scheduler's
// job.restored (its job.submitted lost to a kill) is counted and judged
// from there; job.restored of a known job changes nothing.
func TestCheckerRestored(t *testing.T) {
	f := newFeeder(t)
	f.emit("/scheduler/1", "job.submitted", events.JobInfo{JobID: "known"})
	f.emit("/scheduler/1", "job.queued", events.JobInfo{JobID: "known"})
	f.emit("/scheduler/2", "job.restored", events.JobInfo{JobID: "known", State: "queued"})
	f.emit("/scheduler/2", "job.restored", events.JobInfo{JobID: "unheard", State: "queued"})
	f.emit("/scheduler/2", "job.placed", events.JobInfo{JobID: "unheard"})
	f.emit("/scheduler/2", "job.started", events.JobInfo{JobID: "unheard"})
	f.emit("/scheduler/2", "job.completed", events.JobInfo{JobID: "unheard"})
	if s := f.c.Summary(); s.Jobs != 2 || s.Restored != 1 || s.Completed != 1 || s.Queued != 1 || len(s.Violations) != 0 {
		t.Fatalf("jobs %d restored %d completed %d queued %d violations %v", s.Jobs, s.Restored, s.Completed, s.Queued, s.Violations)
	}
}

// TestCheckerLostUnseen: a job running on a GPU killed while no scheduler
// ran, on a cluster without a job journal, is lost with nothing left that
// knew it: counted as lost unseen, not as running forever (the soak with
// scheduler kills once waited a minute for such a job).
func TestCheckerLostUnseen(t *testing.T) {
	f := newFeeder(t)
	f.emit("/gpu/n0/g0/1", "gpu.up", gpuStatus("n0", "g0", 1, running("r", 0, 10)))
	f.emit("/scheduler/1", "job.submitted", events.JobInfo{JobID: "r"})
	f.emit("/scheduler/1", "job.started", events.JobInfo{JobID: "r"})
	f.emit("/supervisor/scheduler", "sched.down", events.SchedLifecycle{Incarnation: 1})
	f.emit("/chaos/1", "chaos.kill", events.ChaosEvent{Action: "kill", GPU: "g0", Node: "n0"})
	if s := f.c.Summary(); s.LostUnseen != 1 || s.Running != 0 || len(s.Violations) != 0 {
		t.Fatalf("lost unseen %d, running %d, violations %v; want the job lost unseen", s.LostUnseen, s.Running, s.Violations)
	}
}

func TestCheckerDetection(t *testing.T) {
	f := newFeeder(t)
	f.emit("/gpu/n0/g0/1", "gpu.up", gpuStatus("n0", "g0", 1))
	f.emit("/chaos/1", "chaos.hang", events.ChaosEvent{Action: "hang", GPU: "g0", Node: "n0", Duration: "5s"})
	f.now = f.now.Add(700 * time.Millisecond)
	f.emit("/scheduler/1", "gpu.down", gpuStatus("n0", "g0", 1))
	s := f.c.Summary()
	if len(s.Detections) != 1 || s.Detections[0].After < 700*time.Millisecond || s.Detections[0].After > 710*time.Millisecond {
		t.Fatalf("detections %+v, want the hang detected after ~701ms", s.Detections)
	}
	// A partition that heals in the same incarnation was never detected.
	f.emit("/gpu/n0/g1/1", "gpu.up", gpuStatus("n0", "g1", 1))
	f.emit("/chaos/1", "chaos.partition", events.ChaosEvent{Action: "partition", GPU: "g1", Node: "n0", Duration: "100ms"})
	st := gpuStatus("n0", "g1", 0)
	st.Incarnation, st.Change = 1, "rejoined"
	f.emit("/gpu/n0/g1/1", "gpu.status", st)
	if s := f.c.Summary(); s.CheckCounts.Undetected != 1 {
		t.Fatalf("undetected %d, want 1", s.CheckCounts.Undetected)
	}
	// The same on a GPU the checker had not heard from when the chaos
	// event came (it overtook the GPU's first status): healed in place.
	f.emit("/chaos/1", "chaos.partition", events.ChaosEvent{Action: "partition", GPU: "g2", Node: "n0", Duration: "100ms"})
	st = gpuStatus("n0", "g2", 1)
	st.Change = "rejoined"
	f.emit("/gpu/n0/g2/1", "gpu.status", st)
	if s := f.c.Summary(); s.CheckCounts.Undetected != 2 || len(s.Detections) != 1 {
		t.Fatalf("undetected %d, detections %d; want 2 and 1", s.CheckCounts.Undetected, len(s.Detections))
	}
}

// TestCheckerDetectionAcrossARestart tells a kill declared by the running
// scheduler from one a restarted scheduler declared after learning the GPU
// again: the soak holds only the first to the supervisor's at-once report.
func TestCheckerDetectionAcrossARestart(t *testing.T) {
	f := newFeeder(t)
	f.emit("/gpu/n0/g0/1", "gpu.up", gpuStatus("n0", "g0", 1))
	f.emit("/gpu/n0/g1/1", "gpu.up", gpuStatus("n0", "g1", 1))
	f.emit("/chaos/1", "chaos.kill", events.ChaosEvent{Action: "kill", GPU: "g0", Node: "n0"})
	f.emit("/scheduler/1", "gpu.down", gpuStatus("n0", "g0", 1))
	f.emit("/chaos/1", "chaos.kill", events.ChaosEvent{Action: "kill", GPU: "g1", Node: "n0"})
	f.emit("/supervisor/scheduler", "sched.down", events.SchedLifecycle{Incarnation: 1, Durable: true})
	f.emit("/supervisor/scheduler", "sched.up", events.SchedLifecycle{Incarnation: 2})
	f.now = f.now.Add(500 * time.Millisecond)
	f.emit("/scheduler/2", "gpu.down", gpuStatus("n0", "g1", 1))
	s := f.c.Summary()
	if len(s.Detections) != 2 || s.Detections[0].DuringRestart || !s.Detections[1].DuringRestart {
		t.Fatalf("detections %+v, want g0's at once and g1's across the restart", s.Detections)
	}
}

// TestCheckerAKillOfADeadIncarnationIsNoFault: a hung GPU already declared
// dead and then killed has nothing left to detect.
func TestCheckerAKillOfADeadIncarnationIsNoFault(t *testing.T) {
	f := newFeeder(t)
	f.emit("/gpu/n0/g0/1", "gpu.up", gpuStatus("n0", "g0", 1))
	f.emit("/chaos/1", "chaos.hang", events.ChaosEvent{Action: "hang", GPU: "g0", Node: "n0", Duration: "5s"})
	f.emit("/scheduler/1", "gpu.down", gpuStatus("n0", "g0", 1))
	f.emit("/chaos/1", "chaos.kill", events.ChaosEvent{Action: "kill", GPU: "g0", Node: "n0"})
	f.now = f.now.Add(2 * time.Second)
	f.emit("/gpu/n0/g0/1", "gpu.down", gpuStatus("n0", "g0", 1))
	if s := f.c.Summary(); len(s.Detections) != 1 || s.Detections[0].Action != "hang" {
		t.Fatalf("detections %+v, want the hang's only", s.Detections)
	}
}

// TestAMarkWaitsForTheGap: an event received before the connection
// dropped but taken after the checker learned of the reconnect (it waited
// in the subscription) does not use up the "fell behind" mark; the gap
// that follows it is counted as missed, not a violation (CI saw this
// race as a false seq-gap in TestALiveCheckerResyncsAfterItsConnectionDropped).
func TestAMarkWaitsForTheGap(t *testing.T) {
	f := newFeeder(t)
	f.emit("/scheduler/1", "job.submitted", events.JobInfo{JobID: "a"})
	f.emit("/scheduler/1", "job.queued", events.JobInfo{JobID: "a"})
	f.c.Reconnected(1, false)
	f.emit("/scheduler/1", "job.submitted", events.JobInfo{JobID: "b"}) // delivered before the drop
	f.seq["/scheduler/1"] += 2                                          // lost while disconnected
	f.emit("/scheduler/1", "job.submitted", events.JobInfo{JobID: "c"})
	if s := f.c.Summary(); len(s.Violations) != 0 || s.Missed != 2 || s.FellBehind != 1 {
		t.Fatalf("violations %v, missed %d, fell behind %d; want none, 2, 1", s.Violations, s.Missed, s.FellBehind)
	}
}

// TestCheckerTrainingPlaces: a distributed training job's replicas may
// span nodes, but all run one placement (the same restart of its model
// state) on no more GPUs than that placement has replicas.
func TestCheckerTrainingPlaces(t *testing.T) {
	replica := func(restarts int, placement ...int) events.GPUJob {
		j := running("bert", 0, 10)
		j.Training = &model.TrainingState{Restarts: restarts, Placement: placement}
		return j
	}
	f := newFeeder(t)
	f.emit("/scheduler/1", "job.submitted", events.JobInfo{JobID: "bert", GPUs: 3})
	f.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1, replica(1, 2, 1)))
	f.emit("/gpu/n0/g1/1", "gpu.status", gpuStatus("n0", "g1", 1, replica(1, 2, 1)))
	f.emit("/gpu/n1/g2/1", "gpu.status", gpuStatus("n1", "g2", 1, replica(1, 2, 1)))
	if v := f.c.Violations(); len(v) != 0 {
		t.Fatalf("three replicas of one placement over two nodes are one place: %v", v)
	}
	f.emit("/gpu/n1/g3/1", "gpu.status", gpuStatus("n1", "g3", 1, replica(1, 2, 1)))
	if got := kinds(f.c.Violations()); got != "double-run" {
		t.Fatalf("violations %q, want a fourth replica of a 3-replica placement as a double run", got)
	}
	f2 := newFeeder(t)
	f2.emit("/gpu/n0/g0/1", "gpu.status", gpuStatus("n0", "g0", 1, replica(1, 2)))
	f2.emit("/gpu/n1/g2/1", "gpu.status", gpuStatus("n1", "g2", 1, replica(2, 1)))
	if got := kinds(f2.c.Violations()); got != "double-run" {
		t.Fatalf("violations %q, want a replica of an earlier placement still running as a double run", got)
	}
}

// TestCheckerANewBootIsNotADoubleRun (issue 43 item 3): after kill -9 of
// the process, a GPU of the dead boot (incarnation 20001) keeps its last
// status, running j, until it speaks again; the new boot (30001) runs j
// on another GPU. That is not a double run — unless the old incarnation
// speaks again, alive, still running j.
func TestCheckerANewBootIsNotADoubleRun(t *testing.T) {
	f := newFeeder(t)
	f.emit("/gpu/n0/g0/20001", "gpu.status", gpuStatus("n0", "g0", 20001, running("j", 0, 10)))
	f.emit("/gpu/n0/g1/30001", "gpu.status", gpuStatus("n0", "g1", 30001)) // n0's process came back
	f.emit("/gpu/n0/g1/30001", "gpu.status", gpuStatus("n0", "g1", 30001, running("j", 0, 10)))
	if v := f.c.Violations(); len(v) != 0 {
		t.Fatalf("the dead boot's last word and the new boot's run: %v, want no violation", v)
	}
	// A GPU of another process (its own boots) is judged as ever.
	f.emit("/gpu/n9/g9/10001", "gpu.status", gpuStatus("n9", "g9", 10001, running("k", 0, 10)))
	f.emit("/gpu/n0/g1/30001", "gpu.status", gpuStatus("n0", "g1", 30001, running("j", 0, 10), running("k", 20, 10)))
	if got := kinds(f.c.Violations()); got != "double-run" {
		t.Fatalf("k on another process's GPU and on the new boot's: violations %q, want a double run", got)
	}
	// The old boot's word sent before the restart, delivered late: not a
	// sign of life.
	late := gpuStatus("n0", "g0", 20001, running("j", 0, 10))
	b, _ := json.Marshal(late)
	f.seq["/gpu/n0/g0/20001"]++
	f.c.Feed("gpusched.evt.x", &events.Decoded{SpecVersion: "1.0", Source: "/gpu/n0/g0/20001", Type: "gpusched.gpu.status",
		Time: time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC), Seq: f.seq["/gpu/n0/g0/20001"], Data: b})
	if got := kinds(f.c.Violations()); got != "double-run" {
		t.Fatalf("a late word of the dead boot: violations %q, want only the one above", got)
	}
	f.emit("/gpu/n0/g0/20001", "gpu.status", gpuStatus("n0", "g0", 20001, running("j", 0, 10)))
	if got := kinds(f.c.Violations()); got != "double-run,double-run" {
		t.Fatalf("the old boot's GPU, alive, still running j: violations %q, want a second double run", got)
	}
}
