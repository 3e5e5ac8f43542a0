package cluster_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/chaos"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/observer"
)

var soakLong = flag.Bool("soak.long", false, "run the chaos soak at ten times its CI size (10,000 jobs, 500 kills, 200 hangs, 200 partitions)")

// soakPlan is one seeded chaos soak: jobs submitted evenly over window
// (wall time), and faults at seeded random instants within it.
type soakPlan struct {
	seed                                       uint64
	jobs, kills, hangs, partitions, schedKills int
	window                                     time.Duration
	lease                                      time.Duration
	// store keeps the job journal (durable.None: none, the queue dies with
	// a scheduler).
	store durable.Storage
}

func (p soakPlan) scaled() soakPlan {
	if *soakLong {
		p.jobs, p.kills, p.hangs, p.partitions, p.schedKills = 10*p.jobs, 10*p.kills, 10*p.hangs, 10*p.partitions, 10*p.schedKills
		p.window *= 10
	}
	return p
}

// soakJob draws one short job: 2–12 GB, 10–50 % util, 1–6 simulated
// minutes, a checkpoint every 30 s, a priority from the usual mix.
func soakJob(rng *rand.Rand, i int) string {
	prio := []string{"low", "low", "medium", "medium", "high"}[rng.IntN(5)]
	return fmt.Sprintf(`{"name":"soak-%d","priority":%q,"vram":"%dGB","util":%d,"duration":"%ds","checkpoint":"30s","cpu":1,"memory":"2GB"}`,
		i, prio, 2+rng.IntN(11), 10+rng.IntN(41), 60+rng.IntN(301))
}

type soakFault struct {
	at     time.Duration
	action string
}

// soakResult is what a soak did and what the checker found.
type soakResult struct {
	sum      observer.CheckSummary
	accepted int
	refused  int
	done     map[string]int // chaos actions carried out, by action
	skipped  map[string]int
	wall     time.Duration
	// raw is every event seen, as "subject data" (for the story of a
	// failure the checks find).
	raw []string
}

// runSoak runs one soak against the reference cluster at 600× speed with a
// short lease, with `observer check`'s checker attached from the start.
func runSoak(t *testing.T, p soakPlan) soakResult {
	t.Helper()
	start := time.Now()
	cfg := cluster.Config{
		Seed: p.seed,
		Hardware: cluster.Hardware{
			Heartbeat:      p.lease / 6,
			Lease:          p.lease,
			RestartBackoff: 50 * time.Millisecond,
		},
		Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour},
		Timing:     cluster.Timing{Speed: 600},
		Durability: cluster.Durability{Store: p.store},
	}
	if p.store == durable.File {
		cfg.DataDir = t.TempDir()
	}
	c, nc := startCluster(t, cfg)
	subjects := events.NewSubjects("")
	checkConn, err := nats.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer checkConn.Close()
	checker := observer.NewChecker()
	var vmu sync.Mutex
	var firstViolations []string
	checker.OnViolation = func(v observer.Violation) {
		vmu.Lock()
		if len(firstViolations) < 10 {
			firstViolations = append(firstViolations, v.String())
		}
		vmu.Unlock()
	}
	checkSub, err := observer.SubscribeChecker(checkConn, subjects, checker, nopWriter{})
	if err != nil {
		t.Fatal(err)
	}
	// Every event as raw text, to tell the story of a job that did not end.
	var rawMu sync.Mutex
	var raw []string
	rawSub, err := checkConn.Subscribe("gpusched.evt.>", func(m *nats.Msg) {
		rawMu.Lock()
		raw = append(raw, m.Subject+" "+string(m.Data))
		rawMu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	rawSub.SetPendingLimits(-1, -1)
	defer rawSub.Unsubscribe()

	rng := rand.New(rand.NewPCG(p.seed, 1))
	var faults []soakFault
	add := func(action string, n int) {
		for range n {
			faults = append(faults, soakFault{at: time.Duration(rng.Int64N(int64(p.window))), action: action})
		}
	}
	add(events.ChaosKillAction, p.kills)
	add(events.ChaosHang, p.hangs)
	add(events.ChaosPartition, p.partitions)
	for i := range p.schedKills {
		// Spread evenly, so each restart has settled before the next.
		faults = append(faults, soakFault{at: p.window * time.Duration(2*i+1) / time.Duration(2*p.schedKills), action: events.ChaosKillScheduler})
	}
	sort.Slice(faults, func(i, j int) bool { return faults[i].at < faults[j].at })

	res := soakResult{done: map[string]int{}, skipped: map[string]int{}}
	var wg sync.WaitGroup
	// The chaos driver: each fault at its instant, on a GPU not already
	// hung or cut off (such a GPU cannot hear it); a kill on a GPU whose
	// actor is restarting is refused, so another GPU is tried.
	wg.Go(func() {
		frng := rand.New(rand.NewPCG(p.seed, 2))
		gpus := []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6", "gpu-7"}
		busyUntil := map[string]time.Time{}
		for _, f := range faults {
			waitUntil(start.Add(f.at))
			if f.action == events.ChaosKillScheduler {
				// Until the scheduler takes it: it may still be restarting
				// from the last kill (then the responder says so).
				deadline := time.Now().Add(10 * time.Second)
				for {
					rep, err := chaos.Send(nc, subjects, f.action, events.ChaosRequest{Reason: "soak"}, 10*time.Second)
					var r events.ChaosReply
					if err == nil && json.Unmarshal(rep, &r) == nil && r.OK {
						res.done[f.action]++
						break
					}
					if time.Now().After(deadline) {
						res.skipped[f.action]++
						break
					}
					<-time.After(100 * time.Millisecond)
				}
				continue
			}
			ok := false
			// Until some GPU takes it: all may be hung, cut off or restarting.
			for try := 0; !ok && try < 300; try++ {
				if try > 0 {
					<-time.After(100 * time.Millisecond)
				}
				for _, i := range frng.Perm(len(gpus)) {
					g := gpus[i]
					if time.Now().Before(busyUntil[g]) {
						continue
					}
					req := events.ChaosRequest{GPU: g, Reason: "soak"}
					d := time.Duration(0)
					if f.action != events.ChaosKillAction {
						d = p.lease + p.lease/2 + time.Duration(frng.Int64N(int64(p.lease)))
						req.Duration = d.String()
					}
					data, err := chaos.Send(nc, subjects, f.action, req, 10*time.Second)
					if err != nil || !strings.Contains(string(data), `"ok":true`) {
						continue
					}
					busyUntil[g] = time.Now().Add(d + p.lease)
					ok = true
					break
				}
			}
			if ok {
				res.done[f.action]++
			} else {
				res.skipped[f.action]++
			}
		}
	})
	// The submitter: p.jobs accepted jobs, evenly over the window; a
	// submit that goes unanswered (the scheduler is down) is retried.
	var accepted []string
	wg.Go(func() {
		jrng := rand.New(rand.NewPCG(p.seed, 3))
		for i := 0; len(accepted) < p.jobs; i++ {
			waitUntil(start.Add(p.window * time.Duration(len(accepted)) / time.Duration(p.jobs)))
			body := soakJob(jrng, i)
			for {
				msg, err := nc.Request(subjects.JobSubmit(), []byte(body), 2*time.Second)
				if err != nil {
					// No scheduler (restarting): try again shortly.
					res.refused++
					<-time.After(20 * time.Millisecond)
					continue
				}
				var rep events.SubmitReply
				if json.Unmarshal(msg.Data, &rep) == nil && rep.JobID != "" {
					accepted = append(accepted, rep.JobID)
				}
				break
			}
		}
	})
	wg.Wait()
	res.accepted = len(accepted)
	// Every accepted job must end: completed, or (scheduler kills) lost
	// from the queue or finished while no scheduler watched.
	deadline := time.Now().Add(p.window + time.Minute)
	for {
		s := checker.Summary()
		if s.Jobs >= res.accepted && s.Running == 0 && s.Queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("not every accepted job ended within a minute of the last submission: %d running, %d queued", s.Running, s.Queued)
			snap := req(t, nc, "gpusched.cluster.snapshot", `{}`)
			b, _ := json.Marshal(snap["summary"])
			t.Logf("scheduler summary: %s; running %v; queue %d", b, len(snap["running"].([]any)), len(snap["queue"].([]any)))
			for _, stuck := range s.Stuck {
				id, _, _ := strings.Cut(stuck, " ")
				var gpus []any
				if j := tryReq(nc, "gpusched.job.get", `{"job_id":"`+id+`"}`); j != nil {
					h, _ := json.Marshal(j["history"])
					t.Logf("stuck job %s as the scheduler has it: %v on %v; history %s", id, j["state"], j["gpu_ids"], h)
					gpus, _ = j["gpu_ids"].([]any)
				}
				rawMu.Lock()
				for _, r := range raw {
					if strings.Contains(r, id) {
						t.Logf("  %s", r)
					}
				}
				// What its GPUs said last (a stuck job is often a message
				// about it that went astray there).
				for _, g := range gpus {
					var last []string
					for _, r := range raw {
						if strings.Contains(r, "."+fmt.Sprint(g)+".") && !strings.Contains(r, id) {
							last = append(last, r)
						}
					}
					t.Logf("last events of %v:", g)
					for _, r := range last[max(0, len(last)-30):] {
						t.Logf("  %.600s", r)
					}
				}
				if dump := os.Getenv("GPUSCHED_SOAK_DUMP"); dump != "" {
					os.WriteFile(dump, []byte(strings.Join(raw, "\n")), 0o644)
				}
				rawMu.Unlock()
			}
			break
		}
		<-time.After(100 * time.Millisecond)
	}
	observer.DrainChecker(checkConn, checkSub)
	res.sum = checker.Summary()
	rawMu.Lock()
	res.raw = slices.Clone(raw)
	rawMu.Unlock()
	res.wall = time.Since(start)
	for _, v := range firstViolations {
		t.Log(v)
		if i := strings.Index(v, "job "); i >= 0 {
			id := strings.Fields(v[i+4:])[0]
			if j := tryReq(nc, "gpusched.job.get", `{"job_id":"`+id+`"}`); j != nil {
				b, _ := json.Marshal(j["history"])
				t.Logf("  %s history: %s", id, b)
			}
		}
	}
	return res
}

type nopWriter struct{}

func (nopWriter) Write(b []byte) (int, error) { return len(b), nil }

// waitUntil blocks until the wall clock reaches t (pacing, not
// synchronisation: the soak's load is spread over time).
func waitUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		<-time.After(d)
	}
}

func (r soakResult) report(t *testing.T, p soakPlan) {
	t.Helper()
	var b strings.Builder
	r.sum.Write(&b)
	t.Logf("soak seed %d: %d jobs accepted (%d submits unanswered and retried), chaos done %v, skipped %v, wall %s\n%s",
		p.seed, r.accepted, r.refused, r.done, r.skipped, r.wall.Round(time.Millisecond), b.String())
}

// checkSoak asserts the targets on a soak's result.
func checkSoak(t *testing.T, p soakPlan, r soakResult) {
	t.Helper()
	s := r.sum
	if len(s.Violations) > 0 {
		t.Errorf("%d invariant violations; the first: %v", len(s.Violations), s.Violations[0])
	}
	if r.accepted < p.jobs || s.Jobs < p.jobs {
		t.Errorf("%d jobs accepted, %d seen by the checker; want %d", r.accepted, s.Jobs, p.jobs)
	}
	for action, want := range map[string]int{events.ChaosKillAction: p.kills, events.ChaosHang: p.hangs,
		events.ChaosPartition: p.partitions, events.ChaosKillScheduler: p.schedKills} {
		if r.done[action] < want {
			t.Errorf("%d %s faults carried out, want %d (skipped %d)", r.done[action], action, want, r.skipped[action])
		}
	}
	if s.Running != 0 || s.Queued != 0 {
		t.Errorf("%d jobs still running and %d queued at the end (not ended: %v)", s.Running, s.Queued, s.Stuck)
	}
	if (p.schedKills == 0 || p.store != durable.None) && (s.Completed != s.Jobs || s.LostInQueue != 0 || s.LostUnseen != 0) {
		t.Errorf("%d of %d jobs completed (%d lost in a queue): every job must complete", s.Completed, s.Jobs, s.LostInQueue)
	}
	if p.schedKills > 0 && p.store == durable.None && s.Completed+s.LostInQueue+s.CompletedUnreported+s.LostUnseen != s.Jobs {
		t.Errorf("completed %d + lost-in-queue %d + completed-unreported %d + lost-unseen %d != %d jobs", s.Completed, s.LostInQueue, s.CompletedUnreported, s.LostUnseen, s.Jobs)
	}
	if s.Lost == 0 || s.Recovered == 0 {
		t.Errorf("no job was lost and recovered (%d lost, %d recovered): the faults did not bite", s.Lost, s.Recovered)
	}
	if s.CheckCounts.Undetected > 0 {
		t.Errorf("%d hangs or partitions longer than the lease were never declared: %v", s.CheckCounts.Undetected, s.Undetected)
	}
	// A hang or partition is declared once the lease has run out, counted
	// from the last heartbeat that reported the GPU alive (its ping can
	// precede the fault by up to a heartbeat period, 1/6 lease), checked
	// ten times a lease: 1.27 leases, and room for a loaded machine (the
	// race detector; the long soak saw 2.2 leases once) up to 2.5.
	for _, d := range s.Detections {
		limit := 5 * p.lease / 2
		if d.Action == events.ChaosKillAction && !d.DuringRestart {
			// A crash is reported at once by the dying actor (median 1 ms),
			// not by its lease: within one lease is what tells the two apart
			// on a loaded machine (CI once saw 520 ms). Across a scheduler
			// restart the new scheduler declares it once it has learnt the
			// GPU again (within the lease, like a hang).
			limit = p.lease
		}
		if d.After > limit && !d.SelfFenced {
			t.Errorf("%s of %s detected after %s, want within %s (during a restart: %v); the GPU's faults and verdicts:\n%s",
				d.Action, d.GPU, d.After, limit, d.DuringRestart, strings.Join(gpuStory(r.raw, d.GPU), "\n"))
		}
	}
	// A lost job is back in the queue in the same handling that lost it.
	for _, d := range s.Requeued {
		if d > p.lease {
			t.Errorf("a lost job took %s to return to the queue", d)
			break
		}
	}
}

// gpuStory is what the events say of one GPU ("node-0/gpu-4") other than
// its routine statuses: chaos aimed at it, its ups and downs, and the
// statuses that say it woke, rejoined or fenced (the last 80), with
// the scheduler's restarts among them. A detection found late was seen
// once (a -race run of the whole suite) and not again; this is what to
// read next time.
func gpuStory(raw []string, key string) []string {
	node, gpu, _ := strings.Cut(key, "/")
	routine := []string{events.ChangeCommitted, events.ChangeCompleted, events.ChangeAborted,
		events.ChangeReleased, events.ChangePreempted, events.ChangeExpired}
	var out []string
	for _, r := range raw {
		subject, data, _ := strings.Cut(r, " ")
		mine := strings.Contains(subject, "."+node+"."+gpu+".") || (strings.Contains(subject, ".chaos.") && strings.Contains(data, `"gpu":"`+gpu+`"`))
		if !mine && !strings.Contains(subject, ".sched.") {
			continue
		}
		if strings.HasSuffix(subject, ".status") && slices.ContainsFunc(routine, func(c string) bool { return strings.Contains(data, `"change":"`+c+`"`) }) {
			continue
		}
		if strings.Contains(subject, ".sched.") && !strings.HasSuffix(subject, ".down") && !strings.HasSuffix(subject, ".up") {
			continue
		}
		out = append(out, "  "+r[:min(len(r), 400)])
	}
	return out[max(0, len(out)-80):]
}

// TestChaosSoak is the seeded chaos soak: 1,000 jobs on the reference
// cluster while 50 GPU actors are killed, 20 hung and 20 cut off from the
// bus for longer than the lease. Nothing may be lost, nothing may run
// twice at once, VRAM never oversubscribed, seq never broken, every
// failure detected within the lease. `go test -run ChaosSoak -soak.long
// ./cluster/` runs it ten times bigger.
func TestChaosSoak(t *testing.T) {
	p := soakPlan{seed: 1, jobs: 1000, kills: 50, hangs: 20, partitions: 20, window: 30 * time.Second, lease: 600 * time.Millisecond}.scaled()
	r := runSoak(t, p)
	r.report(t, p)
	checkSoak(t, p, r)
}

// TestChaosSoakSchedulerKills is the same soak with the scheduler killed 5
// times as well: running jobs are re-learned from the GPU actors (none is
// lost); jobs only queued at a kill are counted as lost-in-queue.
func TestChaosSoakSchedulerKills(t *testing.T) {
	p := soakPlan{seed: 2, jobs: 1000, kills: 50, hangs: 20, partitions: 20, schedKills: 5, window: 30 * time.Second,
		lease: 600 * time.Millisecond}.scaled()
	r := runSoak(t, p)
	r.report(t, p)
	checkSoak(t, p, r)
}

// TestChaosSoakDurable is the soak with the scheduler killed 20 times on
// the durable store (the job journal on disk): not one accepted job may be
// lost — the queue comes back from the journal at each restart, so
// lost-in-queue is 0 and every job completes.
func TestChaosSoakDurable(t *testing.T) {
	// Kills 2.5 s apart: a scheduler that crashes again within 2 s of its
	// restart waits twice as long before the next (supervision's backoff).
	p := soakPlan{seed: 3, jobs: 1000, kills: 50, hangs: 20, partitions: 20, schedKills: 20, window: 50 * time.Second,
		lease: 600 * time.Millisecond, store: durable.File}.scaled()
	r := runSoak(t, p)
	r.report(t, p)
	checkSoak(t, p, r)
	if r.sum.LostInQueue != 0 {
		t.Errorf("%d accepted jobs lost in the queue on a durable store", r.sum.LostInQueue)
	}
}

// TestAGPUsStoryIsItsFaultsAndVerdicts: what a late detection prints is
// the chaos aimed at that GPU, its downs and ups, its non-routine statuses
// and the scheduler's restarts — not its routine statuses, nor other GPUs'.
func TestAGPUsStoryIsItsFaultsAndVerdicts(t *testing.T) {
	raw := []string{
		`gpusched.evt.chaos.partition {"action":"partition","gpu":"gpu-4","node":"node-0"}`,
		`gpusched.evt.chaos.partition {"action":"partition","gpu":"gpu-5","node":"node-0"}`,
		`gpusched.evt.gpu.node-0.gpu-4.status {"gpu":"gpu-4","change":"committed"}`,
		`gpusched.evt.sched.down {"incarnation":1}`,
		`gpusched.evt.sched.decision {"job_id":"j"}`,
		`gpusched.evt.gpu.node-0.gpu-4.down {"gpu":"gpu-4","reason":"lease expired"}`,
		`gpusched.evt.gpu.node-0.gpu-4.status {"gpu":"gpu-4","change":"rejoined"}`,
		`gpusched.evt.gpu.node-0.gpu-44.down {"gpu":"gpu-44"}`,
	}
	got := gpuStory(raw, "node-0/gpu-4")
	want := []string{"  " + raw[0], "  " + raw[3], "  " + raw[5], "  " + raw[6]}
	if !slices.Equal(got, want) {
		t.Fatalf("story:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
