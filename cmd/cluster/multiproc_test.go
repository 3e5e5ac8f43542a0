package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/observer"
)

// natsCluster starts three NATS servers with JetStream, routed into one
// cluster on loopback, and returns them with their client URLs.
func natsCluster(t *testing.T) ([]*server.Server, string) {
	t.Helper()
	var routes, urls []string
	clientPorts, routePorts := make([]int, 3), make([]int, 3)
	for i := range 3 {
		clientPorts[i], routePorts[i] = testbus.FreePort(t), testbus.FreePort(t)
		routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(routePorts[i]))
		urls = append(urls, "nats://127.0.0.1:"+strconv.Itoa(clientPorts[i]))
	}
	var servers []*server.Server
	for i := range 3 {
		opts := &server.Options{ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: clientPorts[i],
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "gpusched", Host: "127.0.0.1", Port: routePorts[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ","))}
		ns, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go ns.Start()
		t.Cleanup(ns.Shutdown)
		servers = append(servers, ns)
	}
	for _, ns := range servers {
		if !ns.ReadyForConnections(10 * time.Second) {
			t.Fatal("a NATS server did not start")
		}
	}
	url := strings.Join(urls, ",")
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	testbus.WaitFor(t, "the NATS cluster's JetStream to elect a leader", 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err == nil
	})
	return servers, url
}

// buildCluster builds the cluster command into a temporary directory.
func buildCluster(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cluster")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// process is one OS process of the cluster, its output in a file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
}

func startProcess(t *testing.T, bin, name string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{name: name, cmd: cmd, log: logPath}
	t.Cleanup(func() {
		p.kill()
		f.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("--- %s's output (last 3000 bytes):\n%s", name, b[max(0, len(b)-3000):])
		}
	})
	return p
}

// kill kills the process at once (SIGKILL: no clean-up of any kind).
func (p *process) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
	}
}

type jobState struct {
	State          string    `json:"state"`
	FirstStartedAt time.Time `json:"first_started_at"`
	History        []struct {
		State string `json:"state"`
	} `json:"history"`
	Error any `json:"error"`
}

// TestMultiProcessClusterSurvivesServerAndControlPlaneLoss runs the
// issue's check: a 3-server NATS cluster on loopback, the control plane
// (`cluster --no-gpus --nats ... --replicas 3`) and two GPU nodes
// (`cluster node`) as separate OS processes. Jobs are submitted; one NATS
// server is killed, then the control-plane process (SIGKILL) mid-run, and
// the control plane is started again. Every accepted job completes; the
// checker (reading the kept event stream, so that its own reconnect misses
// nothing) finds no job run twice at once and no VRAM overlap; the jobs
// waiting at the kill start in the order they waited.
func TestMultiProcessClusterSurvivesServerAndControlPlaneLoss(t *testing.T) {
	servers, url := natsCluster(t)
	bin := buildCluster(t)
	plane := []string{"--no-gpus", "--nats", url, "--replicas", "3", "--speed", "60", "--rate", "0", "--lease", "2s", "--log-level", "info"}
	cp := startProcess(t, bin, "control-plane", plane...)
	startProcess(t, bin, "rack1-node1", "node", "--name", "rack1-node1", "--gpus", "2xA100-40GB", "--nats", url, "--lease", "2s")
	startProcess(t, bin, "rack2-node7", "node", "--name", "rack2-node7", "--gpus", "2xA100-80GB", "--nats", url, "--lease", "2s")

	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subjects := events.NewSubjects("")
	request := requester(nc, 5*time.Second)
	snapshot := func() (events.Snapshot, error) {
		var s events.Snapshot
		return s, request(subjects.ClusterSnapshot(), events.SnapshotRequest{}, &s)
	}
	testbus.WaitFor(t, "both nodes' four GPUs to join the control plane", 30*time.Second, func() bool {
		s, err := snapshot()
		return err == nil && s.Summary.GPUsAlive == 4 && s.Summary.NodesAlive == 2
	})

	// The checker reads the kept event stream from its start.
	checker := observer.NewChecker()
	cc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
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

	var accepted []string
	submit := func(i int) {
		body := fmt.Sprintf(`{"name":"mp-%d","vram":"30GB","util":50,"duration":"3m","checkpoint":"30s","preemptible":false}`, i)
		var rep struct {
			JobID string `json:"job_id"`
			Error any    `json:"error"`
		}
		if err := request(subjects.JobSubmit(), json.RawMessage(body), &rep); err == nil && rep.Error == nil && rep.JobID != "" {
			accepted = append(accepted, rep.JobID)
		}
	}
	for i := range 12 {
		submit(i)
	}
	// One NATS server goes; the cluster goes on on the other two.
	servers[1].Shutdown()
	for i := 12; i < 24; i++ {
		submit(i)
	}
	if len(accepted) < 20 {
		t.Fatalf("only %d of 24 submissions accepted around the loss of one NATS server", len(accepted))
	}
	// Mid-run, with jobs running and waiting, the control plane dies.
	var before events.Snapshot
	testbus.WaitFor(t, "jobs to run and wait", 10*time.Second, func() bool {
		s, err := snapshot()
		before = s
		return err == nil && len(s.Running) > 0 && len(s.Queue) > 0
	})
	var waiting []string
	for _, q := range before.Queue {
		waiting = append(waiting, q.JobID)
	}
	// The control plane stays down longer than the lease: every GPU,
	// unrenewed, stops its jobs itself and rejoins as its next
	// incarnation; the new control plane finds them lost and re-queues
	// them from their checkpoints.
	var mu sync.Mutex
	rejoined := map[string]bool{}
	sub, err := nc.Subscribe(subjects.AllGPUEvents(), func(m *nats.Msg) {
		var ev struct {
			Data events.GPUStatus `json:"data"`
		}
		if json.Unmarshal(m.Data, &ev) == nil && ev.Data.Change == "rejoined" {
			mu.Lock()
			rejoined[ev.Data.GPU] = true
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	cp.kill()
	testbus.WaitFor(t, "the four GPUs to fence their jobs and rejoin", 15*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(rejoined) == 4
	})
	sub.Unsubscribe()
	startProcess(t, bin, "control-plane-2", plane...) // stopped by the test's clean-up

	for _, id := range accepted {
		var j jobState
		testbus.WaitFor(t, "job "+id+" to complete", 90*time.Second, func() bool {
			return request(subjects.JobGet(), events.JobRef{JobID: id}, &j) == nil && j.State == "completed"
		})
	}
	// The jobs that waited at the kill first started in their queue order.
	var starts []time.Time
	for _, id := range waiting {
		var j jobState
		if err := request(subjects.JobGet(), events.JobRef{JobID: id}, &j); err != nil {
			t.Fatal(err)
		}
		starts = append(starts, j.FirstStartedAt)
	}
	if !slices.IsSortedFunc(starts, func(a, b time.Time) int { return a.Compare(b) }) {
		t.Errorf("the jobs waiting at the kill started at %v: not in their queue order %v", starts, waiting)
	}
	// The checker reads the kept stream on its own connection: job.get
	// can say completed before the checker has read the completion (the
	// test failed once that way in .ci/run, 21 of 24 seen, 0 missing).
	// Its count is judged once it has caught up, or after a deadline.
	caughtUp := func() bool {
		sum := checker.Summary()
		_, missing := seqGaps(sum)
		return sum.Completed+missing >= len(accepted)
	}
	testbus.Await(15*time.Second, caughtUp) // judged below either way
	stopCheck()
	checkWG.Wait()
	if checkErr != nil {
		t.Fatalf("checker: %v", checkErr)
	}
	sum := checker.Summary()
	var b strings.Builder
	sum.Write(&b)
	t.Logf("%d jobs accepted, %d waiting at the kill\n%s", len(accepted), len(waiting), b.String())
	// Events are plain NATS publishes (the job journal, not the event
	// stream, is what must not lose anything): the few a process had
	// written to the server that was killed are gone, and the checker
	// counts those as seq gaps. Every other invariant must hold.
	gaps, missing := seqGaps(sum)
	for _, v := range sum.Violations {
		if v.Kind != "seq-gap" {
			t.Errorf("invariant violated: %v", v)
		}
	}
	t.Logf("%d seq gaps, %d events missing (in flight to the killed NATS server)", gaps, missing)
	if sum.Lost == 0 || sum.Recovered == 0 {
		t.Errorf("no job lost and recovered (%d, %d): the running jobs must have been fenced while the control plane was down",
			sum.Lost, sum.Recovered)
	}
	// A job whose events were among the lost ones may be missing from the
	// checker's count (job.get, above, saw every one complete).
	if sum.Completed+missing < len(accepted) {
		t.Errorf("the checker saw %d completions for %d accepted jobs (%d events missing)", sum.Completed, len(accepted), missing)
	}
}

// requester sends requests on nc, each waiting up to timeout, and decodes
// their answers into the value given.
func requester(nc *nats.Conn, timeout time.Duration) func(subject string, body, into any) error {
	return func(subject string, body, into any) error {
		b, _ := json.Marshal(body)
		msg, err := nc.Request(subject, b, timeout)
		if err != nil {
			return err
		}
		return json.Unmarshal(msg.Data, into)
	}
}

// seqGaps counts the checker's seq gaps and the events they miss.
func seqGaps(sum observer.CheckSummary) (gaps, missing int) {
	for _, v := range sum.Violations {
		if v.Kind == "seq-gap" {
			gaps++
			var n int
			fmt.Sscanf(v.Message[strings.Index(v.Message, ": ")+2:], "%d", &n)
			missing += max(n, 1)
		}
	}
	return gaps, missing
}

// TestSimtestWorkerProcessesGiveTheInProcessOutcomes: `cluster simtest
// --workers 2` runs its seeds in two worker processes of this binary
// (`simtest --serve`); each seed's outcome line is the one the same seed
// gives with the workers in-process.
func TestSimtestWorkerProcessesGiveTheInProcessOutcomes(t *testing.T) {
	bin := buildCluster(t)
	outcomes := func(where string, extra ...string) []string {
		args := append([]string{"simtest", "--seeds", "1-3", "--hours", "2", "--workers", "2", "--verbose", "--quiet"}, extra...)
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("cluster %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if !strings.Contains(string(out), "(2 at once, "+where+")") {
			t.Errorf("cluster %s does not say its workers ran %s:\n%s", strings.Join(args, " "), where, out)
		}
		var lines []string
		for l := range strings.Lines(string(out)) {
			if strings.HasPrefix(l, "seed ") {
				// Each seed's wall time aside: "… — ok (1.2s)".
				lines = append(lines, l[:strings.LastIndex(l, " (")])
			}
		}
		slices.Sort(lines)
		return lines
	}
	apart, together := outcomes("each a process"), outcomes("in this process", "--in-process")
	if len(apart) != 3 || !slices.Equal(apart, together) {
		t.Fatalf("seeds 1-3 in worker processes:\n%s\nin-process:\n%s", strings.Join(apart, "\n"), strings.Join(together, "\n"))
	}
}

// TestAnInterruptedSimtestReportsTheSeedsItRan: interrupted after its
// first seed has ended, `cluster simtest` still prints the summary of the
// seeds run to their end and says how many of all, and exits non-zero;
// its worker processes end with it.
func TestAnInterruptedSimtestReportsTheSeedsItRan(t *testing.T) {
	bin := buildCluster(t)
	cmd := exec.Command(bin, "simtest", "--seeds", "1-200", "--hours", "24", "--workers", "2", "--verbose")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var out strings.Builder
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		out.WriteString(lines.Text() + "\n")
		if strings.HasPrefix(lines.Text(), "seed ") {
			break // one seed has ended
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		out.WriteString(lines.Text() + "\n")
	}
	err = cmd.Wait()
	if err == nil {
		t.Fatalf("an interrupted simtest exited 0:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "of 200 (1-200) run to their end before the interrupt") || !strings.Contains(out.String(), "seeds with violations") {
		t.Fatalf("an interrupted simtest's output does not report the seeds it ran:\n%s", out.String())
	}
}
