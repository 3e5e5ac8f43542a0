package gpu_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/gpusched/gpusched/actors/node"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/simclock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startNode runs one node with one A100 40GB (gpu-0) on a real bus.
func startNode(t *testing.T, speed float64) (*nats.Conn, *statusLog) {
	t.Helper()
	return startNodeWith(t, speed, "A100-40GB", 0)
}

// startNodeWith starts a one-GPU node of gpuModel whose GPU has the given
// noisy-neighbour coefficient.
func startNodeWith(t *testing.T, speed float64, gpuModel string, interference float64) (*nats.Conn, *statusLog) {
	t.Helper()
	return startNodeLease(t, speed, gpuModel, interference, 0)
}

// startNodeLease starts a one-GPU node whose GPU holds a lease of lease
// (none when zero). No scheduler runs, so nothing renews it.
func startNodeLease(t *testing.T, speed float64, gpuModel string, interference float64, lease time.Duration) (*nats.Conn, *statusLog) {
	t.Helper()
	return startNodeHost(t, speed, gpuModel, func(c *node.HostConfig) { c.Interference, c.Lease = interference, lease })
}

// startNodeHost starts a one-GPU node (node-0, gpu-0 of gpuModel) on a
// real bus at speed, its host configured further by configure, and
// records its GPU's events.
func startNodeHost(t *testing.T, speed float64, gpuModel string, configure func(*node.HostConfig)) (*nats.Conn, *statusLog) {
	t.Helper()
	_, nc := testbus.Start(t)
	m, err := model.LookupModel(gpuModel)
	if err != nil {
		t.Fatal(err)
	}
	spec := model.NodeSpec{ID: "node-0", CPU: 16, Memory: 128 * model.GiB, GPUs: []model.GPUSpec{{ID: "gpu-0", Model: m}}}
	log := &statusLog{}
	sub, err := nc.Subscribe("gpusched.evt.gpu.>", func(msg *nats.Msg) {
		var ev struct {
			Type string           `json:"type"`
			Data events.GPUStatus `json:"data"`
		}
		json.Unmarshal(msg.Data, &ev)
		log.add(ev.Type, ev.Data)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	nc.Flush()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := node.HostConfig{Spec: spec, Clock: simclock.NewScaled(time.Unix(0, 0), speed),
		Subjects: events.NewSubjects(""), Conn: nc, Heartbeat: 50 * time.Millisecond, RestartBackoff: 10 * time.Millisecond}
	configure(&cfg)
	h, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		h.Wait()
	})
	return nc, log
}

type statusLog struct {
	mu sync.Mutex
	st []events.GPUStatus
	ty []string
}

func (l *statusLog) add(typ string, st events.GPUStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ty = append(l.ty, typ)
	l.st = append(l.st, st)
}

func (l *statusLog) last(change, job string) *events.GPUStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.st) - 1; i >= 0; i-- {
		if l.st[i].Change == change && l.st[i].JobID == job {
			s := l.st[i]
			return &s
		}
	}
	return nil
}

func ctl(t *testing.T, nc *nats.Conn, c events.Control) events.ControlReply {
	t.Helper()
	b, _ := json.Marshal(c)
	msg, err := nc.Request("gpusched.gpu.node-0.gpu-0.ctl", b, 2*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", c.Op, err)
	}
	var rep events.ControlReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func reserve(t *testing.T, nc *nats.Conn, id string, vram model.Bytes, util, work float64) events.ControlReply {
	return ctl(t, nc, events.Control{Op: events.OpReserve, JobID: id, TTLMillis: 60000,
		Job: &events.Assignment{Name: id, VRAM: int64(vram), Util: util, WorkS: work}})
}

// TestFragmentedVRAMIsRefused: 20GiB free in two 10GiB holes cannot take a
// 15GiB job, and the refusal says "fragmented"; more than the free total is
// an ordinary OOM refusal.
func TestFragmentedVRAMIsRefused(t *testing.T) {
	nc, _ := startNode(t, 1)
	for _, id := range []string{"a", "b", "c", "d"} {
		if rep := reserve(t, nc, id, 10*model.GiB, 10, 3600); !rep.OK {
			t.Fatalf("reserve %s: %s", id, rep.Reason)
		}
	}
	if rep := reserve(t, nc, "e", 1*model.GiB, 10, 3600); rep.OK {
		t.Fatal("a full GPU accepted another reservation")
	}
	ctl(t, nc, events.Control{Op: events.OpAbort, JobID: "a"})
	ctl(t, nc, events.Control{Op: events.OpAbort, JobID: "c"})
	rep := reserve(t, nc, "f", 15*model.GiB, 10, 3600)
	if rep.OK || !strings.HasPrefix(rep.Reason, "fragmented") {
		t.Fatalf("15GiB into two 10GiB holes: ok=%v reason %q, want a fragmented refusal", rep.OK, rep.Reason)
	}
	if rep.Status == nil || rep.Status.VRAMLargestFree != int64(10*model.GiB) {
		t.Fatalf("refusal should carry the GPU's status with a 10GiB largest hole: %+v", rep.Status)
	}
	if rep := reserve(t, nc, "g", 25*model.GiB, 10, 3600); rep.OK || !strings.HasPrefix(rep.Reason, "insufficient") {
		t.Fatalf("25GiB with 20GiB free: %q, want insufficient", rep.Reason)
	}
	if rep := reserve(t, nc, "h", 10*model.GiB, 10, 3600); !rep.OK || rep.Offset != 0 {
		t.Fatalf("10GiB should take the first hole at 0: %+v", rep)
	}
}

// TestUncommittedReservationExpires: a reservation never committed frees
// its VRAM by itself.
func TestUncommittedReservationExpires(t *testing.T) {
	nc, log := startNode(t, 1)
	rep := ctl(t, nc, events.Control{Op: events.OpReserve, JobID: "x", TTLMillis: 30,
		Job: &events.Assignment{Name: "x", VRAM: int64(30 * model.GiB), Util: 10, WorkS: 60}})
	if !rep.OK {
		t.Fatal(rep.Reason)
	}
	testbus.WaitFor(t, "the reservation to expire", 5*time.Second, func() bool { return log.last("expired", "x") != nil })
	if st := log.last("expired", "x"); st.VRAMUsed != 0 {
		t.Fatalf("after expiry %d bytes still used", st.VRAMUsed)
	}
	if rep := ctl(t, nc, events.Control{Op: events.OpCommit, JobID: "x"}); rep.OK {
		t.Fatal("committing an expired reservation succeeded")
	}
	st := ctl(t, nc, events.Control{Op: events.OpDescribe, WithSpecs: true}).Status
	if len(st.Ended) != 1 || st.Ended[0].JobID != "x" || st.Ended[0].Change != "expired" {
		t.Fatalf("ended %+v, want x remembered as expired", st.Ended)
	}
}

// TestColocatedJobsSlowDownAndComplete: two jobs of 80% util share a GPU,
// so each runs at 100/160 of full speed, and both complete.
func TestColocatedJobsSlowDownAndComplete(t *testing.T) {
	nc, log := startNode(t, 3600) // one simulated hour per wall second
	for _, id := range []string{"a", "b"} {
		if rep := reserve(t, nc, id, 10*model.GiB, 80, 360); !rep.OK {
			t.Fatal(rep.Reason)
		}
		if rep := ctl(t, nc, events.Control{Op: events.OpCommit, JobID: id}); !rep.OK {
			t.Fatal(rep.Reason)
		}
	}
	st := log.last("committed", "b")
	if st == nil {
		testbus.WaitFor(t, "commit status", 2*time.Second, func() bool { st = log.last("committed", "b"); return st != nil })
	}
	for _, j := range st.Jobs {
		if j.Rate != 100.0/160 {
			t.Fatalf("job %s runs at rate %v, want %v", j.JobID, j.Rate, 100.0/160)
		}
	}
	if st.Util != 160 {
		t.Fatalf("summed util %v, want 160", st.Util)
	}
	testbus.WaitFor(t, "both jobs to complete", 5*time.Second, func() bool {
		return log.last("completed", "a") != nil && log.last("completed", "b") != nil
	})
	done := log.last("completed", "b")
	if done.EnergyJ <= 0 {
		t.Fatalf("energy %v after running two jobs", done.EnergyJ)
	}
}

// TestNoisyNeighbourAndModelSpeed: below saturation (30% + 50% util) each
// job still slows by 1/(1 + k × its co-runner's util/100), and on a V100 a
// job runs at the V100's relative speed (125/312 of an A100).
func TestNoisyNeighbourAndModelSpeed(t *testing.T) {
	const k = 0.5
	nc, _ := startNodeWith(t, 1, "V100-32GB", k)
	for id, util := range map[string]float64{"a": 30, "b": 50} {
		if rep := reserve(t, nc, id, 4*model.GiB, util, 36000); !rep.OK {
			t.Fatal(rep.Reason)
		}
		if rep := ctl(t, nc, events.Control{Op: events.OpCommit, JobID: id}); !rep.OK {
			t.Fatal(rep.Reason)
		}
	}
	var st *events.GPUStatus
	testbus.WaitFor(t, "both jobs running", 5*time.Second, func() bool {
		d := ctl(t, nc, events.Control{Op: events.OpDescribe})
		st = d.Status
		return st != nil && len(st.Jobs) == 2 && st.Jobs[0].State == "running" && st.Jobs[1].State == "running"
	})
	speed := 125.0 / 312
	want := map[string]float64{"a": speed / (1 + k*50/100), "b": speed / (1 + k*30/100)}
	for _, j := range st.Jobs {
		if math.Abs(j.Rate-want[j.JobID]) > 1e-12 {
			t.Errorf("job %s runs at %v, want %v", j.JobID, j.Rate, want[j.JobID])
		}
	}
}

// TestPreemptReportsProgress: preempting a running job stops it and
// reports the work it had done.
func TestPreemptReportsProgress(t *testing.T) {
	nc, _ := startNode(t, 3600)
	reserve(t, nc, "a", 10*model.GiB, 50, 36000)
	ctl(t, nc, events.Control{Op: events.OpCommit, JobID: "a"})
	var rep events.ControlReply
	testbus.WaitFor(t, "some progress", 5*time.Second, func() bool {
		d := ctl(t, nc, events.Control{Op: events.OpDescribe})
		return d.Status != nil && len(d.Status.Jobs) == 1 && d.Status.Jobs[0].ProgressS > 100
	})
	rep = ctl(t, nc, events.Control{Op: events.OpPreempt, Jobs: []string{"a"}})
	if len(rep.Stopped) != 1 || rep.Stopped[0].ProgressS <= 100 {
		t.Fatalf("preempt reply %+v, want job a with its progress", rep)
	}
	if d := ctl(t, nc, events.Control{Op: events.OpDescribe}); len(d.Status.Jobs) != 0 {
		t.Fatalf("preempted job still on the GPU: %+v", d.Status.Jobs)
	}
}

// TestMalformedControlGetsAnError: the actor answers garbage with an error
// and keeps serving.
func TestMalformedControlGetsAnError(t *testing.T) {
	nc, _ := startNode(t, 1)
	msg, err := nc.Request("gpusched.gpu.node-0.gpu-0.ctl", []byte("{nope"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var rep events.ControlReply
	json.Unmarshal(msg.Data, &rep)
	if rep.Error == nil || rep.Error.Field != "body" {
		t.Fatalf("reply %s, want a body error", msg.Data)
	}
	if rep := ctl(t, nc, events.Control{Op: "explode"}); rep.Error == nil || rep.Error.Field != "op" {
		t.Fatalf("unknown op: %+v", rep)
	}
	for _, pace := range []float64{-1, 2e6} {
		rep := ctl(t, nc, events.Control{Op: events.OpReserve, JobID: "p", TTLMillis: 60000,
			Job: &events.Assignment{Name: "p", VRAM: int64(model.GiB), Util: 10, WorkS: 60, Pace: pace}})
		if rep.Error == nil || rep.Error.Field != "job.pace" {
			t.Errorf("pace %v: %+v, want an error naming job.pace", pace, rep)
		}
	}
	if rep := reserve(t, nc, "ok", model.GiB, 10, 60); !rep.OK {
		t.Fatal("actor stopped serving after bad input")
	}
}

func (l *statusLog) find(typ string, inc int) *events.GPUStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.st {
		if l.ty[i] == typ && l.st[i].Incarnation == inc {
			s := l.st[i]
			return &s
		}
	}
	return nil
}

// TestUnrenewedLeaseFences: with nobody renewing its lease, a GPU running
// a job stops it before the lease ends and rejoins as incarnation 2; its
// memory says the job was fenced, with the assignment the scheduler sent.
func TestUnrenewedLeaseFences(t *testing.T) {
	const lease = 400 * time.Millisecond
	nc, log := startNodeLease(t, 1, "A100-40GB", 0, lease)
	start := time.Now()
	if r := reserve(t, nc, "job-a", 10*model.GiB, 50, 3600); !r.OK {
		t.Fatalf("reserve: %+v", r)
	}
	ctl(t, nc, events.Control{Op: events.OpCommit, JobID: "job-a"})
	// A reservation whose commit never comes (lost with a partition).
	if r := reserve(t, nc, "job-b", 10*model.GiB, 50, 3600); !r.OK {
		t.Fatalf("reserve: %+v", r)
	}
	testbus.WaitFor(t, "incarnation 2's gpu.up", 5*time.Second, func() bool { return log.find("gpusched.gpu.up", 2) != nil })
	if d := time.Since(start); d > lease {
		t.Fatalf("fenced after %s, want before the lease (%s) ends", d, lease)
	}
	up := log.find("gpusched.gpu.up", 2)
	if up.Change != "rejoined" || !strings.Contains(up.Reason, "lease expired") || len(up.Jobs) != 0 {
		t.Fatalf("rejoin %+v, want empty, change rejoined, reason lease expired", up)
	}
	st := ctl(t, nc, events.Control{Op: events.OpDescribe, WithSpecs: true}).Status
	if st.Incarnation < 2 || len(st.Ended) != 2 || st.Ended[0].JobID != "job-a" || st.Ended[0].Change != "fenced" ||
		st.Ended[0].Assignment == nil || st.Ended[0].Assignment.Name != "job-a" {
		t.Fatalf("describe %+v, want job-a remembered as fenced with its assignment", st)
	}
	// The reservation is remembered as expired: a scheduler that placed it
	// and died learns that it never ran here.
	if e := st.Ended[1]; e.JobID != "job-b" || e.Change != "expired" || e.Assignment == nil {
		t.Fatalf("the uncommitted reservation is remembered as %+v, want job-b expired with its assignment", e)
	}
}

// TestKilledActorIsRestartedBySupervisor: a kill ends the actor; its
// supervisor publishes gpu.down for incarnation 1 with the job it held and
// starts incarnation 2 after the backoff, which remembers the job as
// crashed and keeps the energy meter.
func TestKilledActorIsRestartedBySupervisor(t *testing.T) {
	nc, log := startNode(t, 60)
	reserve(t, nc, "job-k", 10*model.GiB, 100, 36000)
	ctl(t, nc, events.Control{Op: events.OpCommit, JobID: "job-k"})
	testbus.WaitFor(t, "some energy", 5*time.Second, func() bool {
		return ctl(t, nc, events.Control{Op: events.OpDescribe}).Status.EnergyJ > 0
	})
	rep := ctl(t, nc, events.Control{Op: events.OpKill, Reason: "test"})
	if !rep.OK || len(rep.Stopped) != 1 || rep.Stopped[0].JobID != "job-k" {
		t.Fatalf("kill reply %+v, status %+v", rep, rep.Status)
	}
	testbus.WaitFor(t, "incarnation 2", 5*time.Second, func() bool { return log.find("gpusched.gpu.up", 2) != nil })
	down := log.find("gpusched.gpu.down", 1)
	if down == nil || down.Change != "crashed" || !strings.Contains(down.Reason, "test") || len(down.Jobs) != 1 {
		t.Fatalf("gpu.down %+v, want incarnation 1 crashed with job-k", down)
	}
	st := ctl(t, nc, events.Control{Op: events.OpDescribe, WithSpecs: true}).Status
	if st.Incarnation != 2 || len(st.Jobs) != 0 || len(st.Ended) != 1 || st.Ended[0].Change != "crashed" {
		t.Fatalf("after the restart %+v, want incarnation 2, empty, remembering job-k as crashed", st)
	}
	if st.EnergyJ < down.EnergyJ {
		t.Fatalf("energy %v after the restart, %v before: the card's meter carries over", st.EnergyJ, down.EnergyJ)
	}
}

// TestAVirtualHangIsArmedBeforeItsControlIsLetGo: on a virtual clock a
// hang lasts simulated time from the instant its control came. The hang's
// end must be armed while the control still holds the clock: armed after,
// it counted from wherever the clock had moved meanwhile (seen in a chaos
// run: a GPU hung at 02:40:33 for 15 minutes woke at 02:59:00, having
// made progress in between). The test is the only other party and holds
// nothing, so a timer armed after the control's release is a loose arm.
// The node's heartbeats (every 50 simulated ms here) keep the clock
// moving while the control travels, so when the hang began is known only
// as "before the reply came": the loose-arm count is what tells the bug.
func TestAVirtualHangIsArmedBeforeItsControlIsLetGo(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := simclock.NewVirtual(epoch)
	nc, log := startNodeHost(t, 1, "A100-40GB", func(c *node.HostConfig) { c.Clock = clock })
	woke := make(chan time.Time, 1)
	sub, err := nc.Subscribe("gpusched.evt.gpu.node-0.gpu-0.status", func(m *nats.Msg) {
		var ev struct {
			SimTime time.Time        `json:"simtime"`
			Data    events.GPUStatus `json:"data"`
		}
		if json.Unmarshal(m.Data, &ev) == nil && ev.Data.Change == events.ChangeWoke {
			woke <- ev.SimTime
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	nc.Flush()
	testbus.WaitFor(t, "gpu.up", 5*time.Second, func() bool { return log.find("gpusched.gpu.up", 1) != nil })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		clock.Stop()
		cancel()
		<-clock.Done()
	})
	go clock.Run(ctx)
	clock.Start()
	rep := ctl(t, nc, events.Control{Op: events.OpChaos, Chaos: &events.ChaosControl{Action: events.ChaosHang, DurationMS: (15 * time.Minute).Milliseconds()}})
	if !rep.OK {
		t.Fatalf("hang refused: %+v", rep.Error)
	}
	// The hang began at or before this instant (the clock stands still
	// from the control's arrival until the actor lets it go).
	answered := clock.Now()
	select {
	case at := <-woke:
		if latest := answered.Add(15 * time.Minute); at.After(latest) || at.Before(epoch.Add(15*time.Minute)) {
			t.Errorf("woke at %s, want 15 minutes after the hang began, which was at or before %s",
				at.Format(time.TimeOnly+".000"), answered.Format(time.TimeOnly+".000"))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hung GPU never woke")
	}
	if n := clock.LooseArms(); n != 0 {
		t.Errorf("%d timers armed after the work that armed them let the clock go", n)
	}
}
