package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	zapobserver "go.uber.org/zap/zaptest/observer"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/livetest"
	"github.com/gpusched/gpusched/observer"
)

// queueOrder is the ids in the snapshot's queue, in queue order.
func queueOrder(t *testing.T, nc *nats.Conn) []string {
	t.Helper()
	var ids []string
	for _, q := range req(t, nc, "gpusched.cluster.snapshot", `{}`)["queue"].([]any) {
		ids = append(ids, q.(obj)["job_id"].(string))
	}
	return ids
}

// TestKillSchedulerKeepsQueueOnTheJournal kills the scheduler of a
// cluster that keeps a job journal (in memory) while one job runs and
// three wait: the reply says nothing queued was lost, the restarted
// scheduler has the three in the same order and the running one
// re-learned from its GPU, and all four complete.
func TestKillSchedulerKeepsQueueOnTheJournal(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{
		Hardware:   cluster.Hardware{RestartBackoff: 20 * time.Millisecond},
		Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour},
		Timing:     cluster.Timing{Speed: 60},
		Durability: cluster.Durability{Store: durable.Memory},
	})
	// The runner lasts 10 wall seconds (speed 60): the three must still be
	// waiting when the restarted scheduler is asked. With a 2-second
	// runner CI once timed out waiting for a queue of three after the
	// restart (not reproduced here); a restart slower than the runner
	// would have let the first waiter run — the likeliest cause, not a
	// proven one.
	running := submit(t, nc, `{"name":"runner","vram":"30GB","duration":"10m","gpu":"gpu-1","preemptible":false}`)
	waitState(t, nc, running, "running", 5*time.Second)
	var waiting []string
	for i, prio := range []string{"low", "high", "medium"} {
		waiting = append(waiting, submit(t, nc, fmt.Sprintf(`{"name":"waiter-%d","priority":%q,"vram":"30GB","duration":"1m","gpu":"gpu-1","preemptible":false}`, i, prio)))
	}
	before := queueOrder(t, nc)
	if len(before) != 3 {
		t.Fatalf("queue %v, want the three waiters", before)
	}
	rep := req(t, nc, "gpusched.chaos.kill-scheduler", `{}`)
	if rep["ok"] != true || rep["queued_lost"] != nil || rep["queued"].(float64) != 3 || !strings.Contains(rep["note"].(string), "journal") {
		t.Fatalf("kill-scheduler reply %v, want ok, nothing lost, 3 queued kept", rep)
	}
	waitFor(t, "the restarted scheduler to answer with its queue", 10*time.Second, func() bool {
		s := tryReq(nc, "gpusched.cluster.snapshot", `{}`)
		return s != nil && len(s["queue"].([]any)) == 3
	})
	if after := queueOrder(t, nc); !slices.Equal(after, before) {
		t.Fatalf("queue after the restart %v, want %v", after, before)
	}
	j := waitState(t, nc, running, "running", 10*time.Second)
	if ids := j["gpu_ids"].([]any); len(ids) != 1 || ids[0] != "gpu-1" {
		t.Fatalf("the running job is on %v after the restart, want gpu-1 (re-learned)", ids)
	}
	for _, id := range append([]string{running}, waiting...) {
		waitState(t, nc, id, "completed", 30*time.Second)
	}
	if h := history(getJob(t, nc, running)); strings.Contains(h, "lost") {
		t.Fatalf("the running job was lost across the scheduler restart: %s", h)
	}
}

// TestRestartOnTheSameDataDir stops a whole cluster (server, GPUs,
// scheduler) with a job running and three waiting, and starts another on
// the same data dir: the waiting jobs are still queued in the same order,
// the running one (its GPUs are gone with the process) is re-queued from
// its last checkpoint, simulated time resumes where it was, and every job
// completes, in queue order.
func TestRestartOnTheSameDataDir(t *testing.T) {
	dir := t.TempDir()
	cfg := cluster.Config{Hardware: cluster.Hardware{Lease: time.Second}, Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour}, Timing: cluster.Timing{Speed: 60}, Durability: cluster.Durability{Store: durable.File, DataDir: dir}}
	c1, nc := livetest.Cluster(t, cfg)
	running := submit(t, nc, `{"name":"runner","vram":"30GB","duration":"4m","checkpoint":"1m","gpu":"gpu-1","preemptible":false}`)
	var waiting []string
	for i, prio := range []string{"low", "high", "medium"} {
		waiting = append(waiting, submit(t, nc, fmt.Sprintf(`{"name":"waiter-%d","priority":%q,"vram":"30GB","duration":"1m","gpu":"gpu-1","preemptible":false}`, i, prio)))
	}
	waitFor(t, "the runner to pass two checkpoints", 10*time.Second, func() bool {
		return getJob(t, nc, running)["progress_s"].(float64) >= 150
	})
	snapBefore := req(t, nc, "gpusched.cluster.snapshot", `{}`)
	simBefore := simTime(t, snapBefore["simtime"])
	c1.Stop()

	cfg.Resume = true // a clean stop, taken up on purpose
	_, nc2 := livetest.Cluster(t, cfg)
	// The second start numbers its actors after the first's: no event
	// source (/gpu/<node>/<gpu>/<incarnation>) repeats across the restart.
	for i, g := range req(t, nc2, "gpusched.cluster.snapshot", `{}`)["gpus"].([]any) {
		was := snapBefore["gpus"].([]any)[i].(obj)["incarnation"].(float64)
		if inc := g.(obj)["incarnation"].(float64); inc <= was || inc != durable.IncarnationsPerBoot+1 {
			t.Fatalf("%v: incarnation %v after the restart (%v before), want %d", g.(obj)["gpu"], inc, was, durable.IncarnationsPerBoot+1)
		}
	}
	// Nothing is placed until the runner is accounted for (its GPU came
	// back empty: lost; core.TestAResumeHoldsPlacementsUntilTheJournalIsSettled
	// shows the hold step by step); then the queue goes in order, the
	// runner at the place it had (below).
	if simAfter := simTime(t, req(t, nc2, "gpusched.cluster.snapshot", `{}`)["simtime"]); simAfter.Before(simBefore) {
		t.Fatalf("simulated time went back from %s to %s across the restart", simBefore, simAfter)
	}
	// Until the new GPUs have been read, the journal's word stands
	// ("running"); then it is lost with its GPU and runs again.
	var j obj
	waitFor(t, "the runner to be lost with its GPU and run again", 15*time.Second, func() bool {
		j = getJob(t, nc2, running)
		return j["state"] == "running" && strings.Contains(history(j), "running,lost,queued,placed,running")
	})
	if p := j["progress_s"].(float64); p < 120 {
		t.Fatalf("runner resumed from %vs, want at least the 120s checkpoint it had passed", p)
	}
	var started []time.Time
	for _, id := range waiting {
		j := waitState(t, nc2, id, "completed", 60*time.Second)
		started = append(started, simTime(t, j["started_at"]))
	}
	// Queue order is priority first: high (1), medium (2), low (0); the
	// runner, medium like the default, kept its place ahead of the
	// medium waiter submitted after it: the restart cost it no place.
	if !(started[1].Before(started[2]) && started[2].Before(started[0])) {
		t.Fatalf("waiters started at %v, want high, medium, low", started)
	}
	if ran := simTime(t, j["started_at"]); !ran.Before(started[2]) {
		t.Fatalf("the runner started again at %s, the medium waiter at %s: the runner was ahead of it", ran, started[2])
	}
}

func simTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %v: %v", v, err)
	}
	return at
}

// eventKeys reads JSON lines of events and returns each one's source/seq.
func eventKeys(t *testing.T, lines string) []string {
	t.Helper()
	var keys []string
	for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
		if l == "" {
			continue
		}
		var ev struct {
			Source string `json:"source"`
			Seq    uint64 `json:"seq"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("a logged line is not an event: %q", l)
		}
		keys = append(keys, fmt.Sprintf("%s#%d", ev.Source, ev.Seq))
	}
	return keys
}

// logFor runs observer.Log with h until cond holds for what it wrote.
func logFor(t *testing.T, nc *nats.Conn, h observer.History, cond func(out string) bool) string {
	t.Helper()
	var mu sync.Mutex
	var buf strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- observer.Log(ctx, nc, events.NewSubjects(""), h, writerFunc(func(b []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return buf.Write(b)
		}))
	}()
	waitFor(t, "the log to catch up", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return cond(buf.String())
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("observer.Log: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return buf.String()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// TestLogReplaysHistoryAndResumes: the event stream keeps the cluster's
// events, so a log started after them replays them (--from-start), and a
// durable reader stopped and started again continues where it stopped:
// together its two runs hold every event once, none missed, none twice.
func TestLogReplaysHistoryAndResumes(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Timing: cluster.Timing{Speed: 600}, Durability: cluster.Durability{Store: durable.Memory}})
	var ids []string
	for i := range 3 {
		ids = append(ids, submit(t, nc, fmt.Sprintf(`{"name":"history-%d","vram":"4GB","duration":"1m"}`, i)))
	}
	for _, id := range ids {
		waitState(t, nc, id, "completed", 10*time.Second)
	}
	completedAll := func(out string) bool {
		for _, id := range ids {
			if !strings.Contains(out, `"type":"gpusched.job.completed"`) || !strings.Contains(out, id) {
				return false
			}
		}
		return strings.Count(out, `"type":"gpusched.job.completed"`) >= 3
	}
	all := logFor(t, nc, observer.History{FromStart: true}, completedAll)
	if !strings.Contains(all, `"type":"gpusched.job.submitted"`) {
		t.Fatalf("--from-start did not replay the submissions")
	}
	if since := logFor(t, nc, observer.History{Since: time.Hour}, completedAll); len(eventKeys(t, since)) == 0 {
		t.Fatalf("--since 1h replayed nothing")
	}

	// A durable reader takes part of the history, stops, and resumes.
	first := logFor(t, nc, observer.History{Durable: "resume-test", FromStart: true}, func(out string) bool {
		return strings.Count(out, "\n") >= 20
	})
	late := submit(t, nc, `{"name":"while-away","vram":"4GB","duration":"1m"}`)
	waitState(t, nc, late, "completed", 10*time.Second)
	second := logFor(t, nc, observer.History{Durable: "resume-test"}, func(out string) bool {
		return strings.Contains(out, late) && strings.Contains(out, `"type":"gpusched.job.completed"`)
	})
	whole := logFor(t, nc, observer.History{FromStart: true}, func(out string) bool { return strings.Contains(out, late) })
	got := map[string]int{}
	for _, k := range append(eventKeys(t, first), eventKeys(t, second)...) {
		got[k]++
	}
	for k, n := range got {
		if n > 1 {
			t.Fatalf("event %s delivered %d times across the durable reader's restart", k, n)
		}
	}
	firstKeys := eventKeys(t, first)
	wholeKeys := eventKeys(t, whole)
	if !slices.Equal(wholeKeys[:len(firstKeys)], firstKeys) {
		t.Fatalf("the durable reader's first run is not the start of the stream")
	}
	rest := wholeKeys[len(firstKeys):]
	secondKeys := eventKeys(t, second)
	// The second run continues exactly where the first stopped: its events
	// are the rest of the stream, in order, from the first one on.
	if n := min(len(secondKeys), len(rest)); n == 0 || !slices.Equal(secondKeys[:n], rest[:n]) {
		t.Fatalf("the durable reader's second run does not continue where the first stopped:\nfirst ended %v\nsecond began %v\nstream has %v",
			firstKeys[len(firstKeys)-1:], secondKeys[:min(3, len(secondKeys))], rest[:min(3, len(rest))])
	}
}

// TestACleanStopIsNotResumed (issue 24 item 1): after a clean stop the
// next start begins a new run (none of the old jobs); Resume takes a
// stopped run up. (A crashed run, which never recorded its stop, is taken
// up by default: cmd/cluster's TestMultiProcessClusterSurvivesServerAndControlPlaneLoss
// kills the control plane with SIGKILL and every accepted job completes.)
func TestACleanStopIsNotResumed(t *testing.T) {
	dir := t.TempDir()
	cfg := cluster.Config{Timing: cluster.Timing{Speed: 60}, Durability: cluster.Durability{Store: durable.File, DataDir: dir}}
	c1, nc := livetest.Cluster(t, cfg)
	old := submit(t, nc, `{"name":"old","vram":"4GB","duration":"10h"}`)
	c1.Stop()
	c2, nc2 := livetest.Cluster(t, cfg)
	if e := req(t, nc2, "gpusched.job.get", obj{"job_id": old})["error"]; e == nil {
		t.Fatalf("job %s of a cleanly stopped run was resumed", old)
	}
	second := submit(t, nc2, `{"name":"second","vram":"4GB","duration":"10h"}`)
	c2.Stop()
	cfg.Resume = true
	_, nc3 := livetest.Cluster(t, cfg)
	if j := req(t, nc3, "gpusched.job.get", obj{"job_id": second}); j["error"] != nil {
		t.Fatalf("--resume did not take up the stopped run: %v", j["error"])
	}
}

// TestFreshStartsEmpty: a cluster started with Fresh on a store holding a
// previous run has none of its jobs.
func TestFreshStartsEmpty(t *testing.T) {
	dir := t.TempDir()
	cfg := cluster.Config{Timing: cluster.Timing{Speed: 60}, Durability: cluster.Durability{Store: durable.File, DataDir: dir}}
	c1, nc := livetest.Cluster(t, cfg)
	id := submit(t, nc, `{"name":"old","vram":"4GB","duration":"10h"}`)
	c1.Stop()
	cfg.Fresh = true
	logs, seen := zapobserver.New(zap.InfoLevel)
	cfg.Logger = zap.New(logs)
	_, nc2 := livetest.Cluster(t, cfg)
	if e := req(t, nc2, "gpusched.job.get", obj{"job_id": id})["error"]; e == nil {
		t.Fatalf("job %s survived a fresh start", id)
	}
	// And it says what it discarded.
	said := seen.FilterMessageSnippet("--fresh: discarding").All()
	if len(said) != 1 || said[0].ContextMap()["jobs"] != int64(1) || said[0].ContextMap()["unfinished"] != int64(1) {
		t.Fatalf("--fresh said %v, want once that it discards 1 job, 1 unfinished", said)
	}
}

// TestDataDirIsOneClusters: a second cluster on a data dir in use is
// refused with a message saying so.
func TestDataDirIsOneClusters(t *testing.T) {
	cfg := cluster.Config{Access: cluster.Access{Listen: "127.0.0.1:-1"}, Timing: cluster.Timing{Speed: 60}, Durability: cluster.Durability{Store: durable.File, DataDir: t.TempDir()}}
	livetest.Cluster(t, cfg)
	c, err := cluster.Start(context.Background(), cfg)
	if err == nil {
		c.Stop()
		t.Fatal("a second cluster started on a data dir in use")
	}
	if !strings.Contains(err.Error(), "in use") {
		t.Fatalf("error %q, want it to say the data dir is in use", err)
	}
}

// TestRecordingResumesWithoutGap: `observer record` stopped and started
// again on the same file continues after its last event: the file holds
// the kept stream's events from its first one on, each once, in order.
func TestRecordingResumesWithoutGap(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Timing: cluster.Timing{Speed: 600}, Durability: cluster.Durability{Store: durable.Memory}})
	path := t.TempDir() + "/run.jsonl"
	record := func(until func(string) bool) {
		f, h, err := observer.OpenRecording(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- observer.Log(ctx, nc, events.NewSubjects(""), h, f) }()
		waitFor(t, "the recording to catch up", 10*time.Second, func() bool {
			b, _ := os.ReadFile(path)
			return until(string(b))
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	first := submit(t, nc, `{"name":"before","vram":"4GB","duration":"1m"}`)
	record(func(s string) bool { return strings.Count(s, "\n") >= 5 })
	// While no recorder runs, the cluster goes on.
	late := submit(t, nc, `{"name":"while-away","vram":"4GB","duration":"1m"}`)
	waitState(t, nc, late, "completed", 10*time.Second)
	record(func(s string) bool {
		return strings.Contains(s, late) && strings.Contains(s, `"type":"gpusched.job.completed"`)
	})
	b, _ := os.ReadFile(path)
	got := eventKeys(t, string(b))
	whole := eventKeys(t, logFor(t, nc, observer.History{FromStart: true}, func(out string) bool { return strings.Contains(out, late) }))
	at := slices.Index(whole, got[0])
	if at < 0 {
		t.Fatalf("the recording's first event %s is not in the stream", got[0])
	}
	if n := min(len(got), len(whole)-at); !slices.Equal(got[:n], whole[at:at+n]) {
		t.Fatalf("the resumed recording is not the stream from its first event on: a gap or a repeat (first job %s)", first)
	}
}

// TestJournaledJobWaitsForItsHungGPU: the scheduler is killed while the
// GPU a job runs on hangs for several leases. The restarted scheduler has
// the job from the journal but cannot read the GPU: the job must not run
// anywhere else until the GPU wakes, stops it itself (its lease ran out)
// and says so; then it is re-queued and runs again — never twice at once.
func TestJournaledJobWaitsForItsHungGPU(t *testing.T) {
	nc, checker, _ := faultClusterOn(t, durable.Memory)
	id := submit(t, nc, `{"name":"pinned-ish","vram":"10GB","duration":"10h","checkpoint":"1m","models":["A100-40GB"]}`)
	j := waitState(t, nc, id, "running", 5*time.Second)
	gpu := j["gpu_ids"].([]any)[0].(string)
	chaosOK(t, nc, "hang", `{"gpu":"`+gpu+`","duration":"3s"}`)
	chaosOK(t, nc, "kill-scheduler", `{}`)
	var h string
	waitFor(t, "the job to run again after the GPU woke", 15*time.Second, func() bool {
		j := tryReq(nc, "gpusched.job.get", `{"job_id":"`+id+`"}`)
		if j == nil || j["state"] != "running" {
			return false
		}
		h = history(j)
		return strings.Contains(h, "lost")
	})
	// The checker (faultClusterOn's clean-up) fails the test on a double
	// run. It reads on its own connection: wait for it to see the loss.
	waitFor(t, "the checker to see the job lost (history "+h+")", 5*time.Second, func() bool {
		return checker.Summary().CheckCounts.Lost > 0
	})
}
