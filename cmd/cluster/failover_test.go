package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/observer"
)

// TestAStandbyTakesOverWhenTheActiveControlPlaneDies (issue 43 item 4):
// one NATS server with JetStream, an active control plane and a standby
// (`cluster --standby`), two GPU nodes, each its own OS process. Eight
// submitters submit jobs, each under its own job_id, retrying until it is
// accepted; mid-run the active control plane is killed (SIGKILL). The
// standby takes the store over and places again; every accepted job
// completes once, and the checker, reading the kept event stream from its
// start, finds no job run twice at once and no VRAM overlap.
func TestAStandbyTakesOverWhenTheActiveControlPlaneDies(t *testing.T) {
	failover(t, func(active *process, _ *tcpProxy, _ time.Duration) { active.kill() })
}

// TestAStandbyTakesOverFromACutOffControlPlane: the same, but the active
// control plane reaches the bus through a proxy that is cut for three
// leases and then healed. The cut-off one stops placing by itself; the
// standby takes over; healed, the first learns from the store that it was
// deposed and stands by, so only one scheduler ever places.
func TestAStandbyTakesOverFromACutOffControlPlane(t *testing.T) {
	failover(t, func(_ *process, proxy *tcpProxy, lease time.Duration) {
		proxy.cut()
		time.AfterFunc(3*lease, proxy.heal)
	})
}

// failover runs the scenario with fault done to the active control plane
// mid-run.
func failover(t *testing.T, fault func(active *process, proxy *tcpProxy, lease time.Duration)) {
	if testing.Short() {
		t.Skip("builds and runs four processes")
	}
	ns, _ := testbus.StartJetStream(t)
	url := ns.ClientURL()
	proxy := newTCPProxy(t, ns.Addr().String())
	bin := buildCluster(t)
	const lease = 2 * time.Second
	plane := []string{"--no-gpus", "--nats", url, "--speed", "60", "--rate", "0", "--lease", lease.String(), "--log-level", "info"}
	active := startProcess(t, bin, "active", append(without(plane, "--nats", url), "--nats", "nats://"+proxy.addr())...)
	testbus.WaitFor(t, "the active control plane to lead", 30*time.Second, func() bool {
		b, _ := os.ReadFile(active.log)
		return strings.Contains(string(b), "leading the control plane")
	})
	startProcess(t, bin, "standby", append([]string{"--standby"}, without(plane, "--rate", "0")...)...)
	startProcess(t, bin, "node-a", "node", "--name", "node-a", "--gpus", "2xA100-40GB", "--nats", url, "--lease", lease.String())
	startProcess(t, bin, "node-b", "node", "--name", "node-b", "--gpus", "2xA100-80GB", "--nats", url, "--lease", lease.String())

	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subjects := events.NewSubjects("")
	request := requester(nc, 2*time.Second)
	testbus.WaitFor(t, "both nodes' four GPUs to join the active control plane", 30*time.Second, func() bool {
		var s events.Snapshot
		return request(subjects.ClusterSnapshot(), events.SnapshotRequest{}, &s) == nil && s.Summary.GPUsAlive == 4
	})
	ups := make(chan events.SchedLifecycle, 16)
	var firstPlacedAfter sync.Map // source → time: placements by each scheduler
	if _, err := nc.Subscribe(subjects.Prefix+".evt.>", func(m *nats.Msg) {
		ev, fe := events.DecodeEvent(m.Data)
		if fe != nil {
			return
		}
		if strings.HasSuffix(ev.Type, "sched.up") {
			var l events.SchedLifecycle
			if json.Unmarshal(ev.Data, &l) == nil {
				ups <- l
			}
		}
		if strings.HasSuffix(ev.Type, "job.placed") {
			firstPlacedAfter.LoadOrStore(ev.Source, time.Now())
		}
	}); err != nil {
		t.Fatal(err)
	}
	checker := observer.NewChecker()
	cc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	checkCtx, stopCheck := context.WithCancel(context.Background())
	var checkErr error
	var checkWG sync.WaitGroup
	checkWG.Go(func() {
		checkErr = observer.CheckHistory(checkCtx, cc, subjects, observer.History{FromStart: true}, checker, os.Stderr)
	})

	// Eight submitters, five jobs each, every job retried under its own
	// id until accepted (no scheduler answers between the kill and the
	// take-over: "no responders").
	var mu sync.Mutex
	var accepted []string
	var submitters sync.WaitGroup
	killAt := make(chan struct{})
	for s := range 8 {
		submitters.Go(func() {
			for i := range 5 {
				if i == 2 && s == 0 {
					close(killAt)
				}
				id := fmt.Sprintf("fo-%d-%d", s, i)
				body := fmt.Sprintf(`{"job_id":%q,"name":%q,"vram":"30GB","util":40,"duration":"2m","checkpoint":"20s"}`, id, id)
				deadline := time.Now().Add(60 * time.Second)
				for time.Now().Before(deadline) {
					var rep struct {
						JobID string `json:"job_id"`
						Error any    `json:"error"`
					}
					if err := request(subjects.JobSubmit(), json.RawMessage(body), &rep); err == nil && rep.Error == nil && rep.JobID == id {
						mu.Lock()
						accepted = append(accepted, id)
						mu.Unlock()
						break
					}
					time.Sleep(100 * time.Millisecond) // a retry's pace, not a wait for an event
				}
				time.Sleep(300 * time.Millisecond)
			}
		})
	}
	<-killAt
	fault(active, proxy, lease)
	killed := time.Now()
	var took events.SchedLifecycle
	select {
	case took = <-ups:
	case <-time.After(10 * lease):
		t.Fatalf("the standby did not take over within %s of the kill", 10*lease)
	}
	tookAfter := time.Since(killed)
	if !strings.Contains(took.Reason, "took the control plane over") {
		t.Fatalf("sched.up after the kill: %+v, want the standby's take-over", took)
	}
	submitters.Wait()
	if len(accepted) != 40 {
		t.Fatalf("%d of 40 jobs accepted", len(accepted))
	}
	for _, id := range accepted {
		var j jobState
		testbus.WaitFor(t, "job "+id+" to complete", 90*time.Second, func() bool {
			return request(subjects.JobGet(), events.JobRef{JobID: id}, &j) == nil && j.State == "completed"
		})
	}
	newSource := fmt.Sprintf("/scheduler/%d", took.Incarnation)
	placedAt, ok := firstPlacedAfter.Load(newSource)
	if !ok {
		t.Fatalf("no placement by the standby's scheduler (%s)", newSource)
	}
	placedAfter := placedAt.(time.Time).Sub(killed)
	testbus.Await(15*time.Second, func() bool { return checker.Summary().Completed >= len(accepted) })
	stopCheck()
	checkWG.Wait()
	if checkErr != nil && !errors.Is(checkErr, context.Canceled) {
		t.Fatalf("checker: %v", checkErr)
	}
	sum := checker.Summary()
	for _, v := range sum.Violations {
		t.Errorf("invariant violated: %v", v)
	}
	if sum.Completed != len(accepted) {
		t.Errorf("the checker saw %d completions of %d accepted jobs", sum.Completed, len(accepted))
	}
	t.Logf("lease %s: the standby took over %s after the fault and placed its first job %s after it; %d jobs completed, %d lost and re-queued",
		lease, tookAfter.Round(time.Millisecond), placedAfter.Round(time.Millisecond), sum.Completed, sum.Lost)
	// Only the standby's scheduler placed after the fault: the first one's
	// placements all came before it.
	firstPlacedAfter.Range(func(src, at any) bool {
		if src != newSource && at.(time.Time).After(killed.Add(lease)) {
			t.Errorf("%s placed its first job %s after the fault", src, at.(time.Time).Sub(killed))
		}
		return true
	})
	if tookAfter > lease {
		t.Errorf("the standby took over %s after the fault, want within a lease (%s)", tookAfter, lease)
	}
	// The bar: the standby places again within one lease of the
	// fault (the nodes heartbeat to it as soon as it says sched.up).
	if placedAfter > lease {
		t.Errorf("the standby placed its first job %s after the fault, want within a lease (%s)", placedAfter, lease)
	}
}

// without is args without the flag name and its value.
func without(args []string, name, value string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == name && i+1 < len(args) && args[i+1] == value {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// tcpProxy forwards TCP connections to a target until cut: then it closes
// every connection it forwards and refuses new ones, until healed.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			in.Close()
			continue
		}
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go func() { io.Copy(out, in); out.Close() }()
		go func() { io.Copy(in, out); in.Close() }()
	}
}

// cut closes every forwarded connection and refuses new ones.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// heal lets connections through again.
func (p *tcpProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}
