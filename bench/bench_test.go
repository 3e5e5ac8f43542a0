package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/internal/livetest"
	"github.com/gpusched/gpusched/policy"
)

// The benchmarks under `cluster bench`: go test -run '^$' -bench . ./bench/

// BenchmarkDecision is one placement decision (with the index's upkeep for
// the last decisions' changes) per policy as the cluster grows.
func BenchmarkDecision(b *testing.B) {
	for _, n := range []int{8, 1000, 10000, 100000} {
		for _, name := range policy.Names[policy.Policy]() {
			b.Run(fmt.Sprintf("%s/gpus=%d", name, n), func(b *testing.B) {
				c := RandomCluster(n, 1, true)
				b.ReportAllocs()
				cost, err := DecisionCost(c, name, b.N)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(cost.PerDecision.Nanoseconds()), "ns/decision")
			})
		}
	}
}

// BenchmarkSubmitToPlaced is submit→placed latency through the whole path
// on the idle reference cluster, per store, over loopback TCP and
// in-process.
func BenchmarkSubmitToPlaced(b *testing.B) {
	for _, st := range []durable.Storage{durable.None, durable.Memory, durable.File} {
		for _, tcp := range []bool{false, true} {
			b.Run(fmt.Sprintf("store=%s/%s", st.String(), map[bool]string{false: "inprocess", true: "tcp"}[tcp]), func(b *testing.B) {
				err := withCluster(context.Background(), Options{TempDir: b.TempDir()}, ClusterOptions{GPUs: "6xA100-40GB,2xA100-80GB", Policy: "binpack", Store: st}, tcp,
					func(nc *nats.Conn, _ *cluster.Cluster) error {
						b.ResetTimer()
						lats, err := SubmitLatency(nc, b.N)
						b.StopTimer()
						if err != nil {
							return err
						}
						b.ReportMetric(float64(lats.P(0.5).Microseconds()), "p50-µs")
						b.ReportMetric(float64(lats.P(0.99).Microseconds()), "p99-µs")
						return nil
					})
				if err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// BenchmarkSubmitToPlacedSecured is BenchmarkSubmitToPlaced's TCP path
// (no journal) on a bus that authenticates: an admin signed in with an
// nkey over mutual TLS, the scheduler reading the caller from each
// request; plain TCP beside it for the cost of both.
func BenchmarkSubmitToPlacedSecured(b *testing.B) {
	for _, secured := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain-tcp", true: "nkey+mtls"}[secured], func(b *testing.B) {
			var nc *nats.Conn
			if secured {
				nc = livetest.SecureCluster(b, cluster.Config{}).As(b, "admin")
			} else {
				_, local := livetest.Cluster(b, cluster.Config{Timing: cluster.Timing{Speed: 1}})
				nc = local
			}
			b.ResetTimer()
			lats, err := SubmitLatency(nc, b.N)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(lats.P(0.5).Microseconds()), "p50-µs")
			b.ReportMetric(float64(lats.P(0.99).Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkPlacementThroughput is placements per second with 32 submits
// in flight on the reference cluster (binpack), per store, and the
// process's CPU time per placement (steadier than the rate on a shared VM).
func BenchmarkPlacementThroughput(b *testing.B) {
	for _, st := range []durable.Storage{durable.None, durable.Memory, durable.File} {
		b.Run("store="+st.String(), func(b *testing.B) {
			err := withCluster(context.Background(), Options{TempDir: b.TempDir()}, ClusterOptions{GPUs: "6xA100-40GB,2xA100-80GB", Policy: "binpack", Store: st}, true,
				func(nc *nats.Conn, _ *cluster.Cluster) error {
					b.ResetTimer()
					rate, cpu, err := ThroughputCPU(nc, max(1, b.N/referenceRound), min(b.N, referenceRound), referenceWindow, true)
					if err != nil {
						return err
					}
					b.ReportMetric(rate, "placements/s")
					b.ReportMetric(float64(cpu.Nanoseconds())/1e3, "cpu-µs/placement")
					return nil
				})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// TestMeasuresMeasure runs each measure small and checks its figures are
// figures: a broken driver, a refused submit or a policy that stops
// placing fails here rather than in a bench run.
func TestMeasuresMeasure(t *testing.T) {
	for _, name := range policy.Names[policy.Policy]() {
		cost, err := DecisionCost(RandomCluster(64, 1, true), name, 50)
		if err != nil {
			t.Fatal(err)
		}
		if cost.PerDecision <= 0 {
			t.Fatalf("%s: %v per decision", name, cost.PerDecision)
		}
	}
	stages := &Stages{}
	err := withCluster(context.Background(), Options{TempDir: t.TempDir()}, ClusterOptions{GPUs: "6xA100-40GB,2xA100-80GB", Policy: "binpack", Store: durable.Memory, Trace: stages.Trace}, true,
		func(nc *nats.Conn, c *cluster.Cluster) error {
			lats, err := SubmitLatency(nc, 20)
			if err != nil {
				return err
			}
			if len(lats) != 20 || lats.P(0.5) <= 0 || lats.P(0.99) < lats.P(0.5) {
				return fmt.Errorf("latencies %v", lats)
			}
			// Every submission (20 and 2 to warm up) followed through the
			// scheduler: two answers (the node's, the GPU's) after the
			// reservations went out, the record stored, then the reply.
			if err := stages.check(22); err != nil {
				return fmt.Errorf("%w: %s", err, stages)
			}
			stop, err := Observers(c, 2)
			if err != nil {
				return err
			}
			rate, cpu, err := ThroughputCPU(nc, 2, 60, 16, true)
			got := stop()
			if err != nil {
				return err
			}
			if rate <= 0 || cpu <= 0 {
				return fmt.Errorf("rate %v, %v of CPU per placement", rate, cpu)
			}
			// Each placement is at least a job.placed and a job.running
			// event, to each of the two observers.
			if got < 2*2*120 {
				return fmt.Errorf("the observers got %d events for 120 placements", got)
			}
			silent, err := SilentNode(c, nc, 100, 100*time.Millisecond, 500*time.Millisecond)
			if err != nil {
				return err
			}
			if len(silent.Latencies) == 0 || silent.Asked == 0 || silent.HealthyDowns != 0 {
				return fmt.Errorf("a silent node: %d requests answered, %d describes asked, %d healthy GPUs down",
					len(silent.Latencies), silent.Asked, silent.HealthyDowns)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Footprint(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	if f.PerGPU <= 0 || f.StartUp <= 0 || f.StartUp > time.Minute {
		t.Fatalf("footprint %+v", f)
	}
}

// check says whether n submissions were followed through every stage, in
// the order they must come (the tests').
func (s *Stages) check(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range []Latencies{s.sent, s.firstAnswer, s.lastAnswer, s.stored, s.replied} {
		if len(l) != n {
			return fmt.Errorf("%d, %d, %d, %d and %d submissions seen sent, answered, answered in full, stored and replied to; want %d each",
				len(s.sent), len(s.firstAnswer), len(s.lastAnswer), len(s.stored), len(s.replied), n)
		}
	}
	for i := range n {
		if !(s.sent[i] < s.firstAnswer[i] && s.firstAnswer[i] < s.lastAnswer[i] && s.lastAnswer[i] <= s.replied[i] && s.stored[i] <= s.replied[i]) {
			return fmt.Errorf("submission %d: sent %v, answered %v and %v, stored %v, replied %v: out of order", i, s.sent[i], s.firstAnswer[i], s.lastAnswer[i], s.stored[i], s.replied[i])
		}
	}
	return nil
}

// TestTheCeilingSendsAPlacementsMessages counts what the ceiling sends on
// its own subjects: per placement the submission, three job events, the
// reservation batch, the commit batch, the GPU's status and two job
// events (the node's and the GPU's answers and the reply go to inboxes).
func TestTheCeilingSendsAPlacementsMessages(t *testing.T) {
	err := withCluster(context.Background(), Options{TempDir: t.TempDir()}, ClusterOptions{GPUs: "6xA100-40GB,2xA100-80GB", Policy: "binpack", Store: durable.None}, true,
		func(nc *nats.Conn, c *cluster.Cluster) error {
			var mu sync.Mutex
			bySuffix := map[string]int{}
			sub, err := nc.Subscribe("bench-ceiling.>", func(m *nats.Msg) {
				mu.Lock()
				defer mu.Unlock()
				bySuffix[m.Subject[strings.IndexByte(m.Subject[len("bench-ceiling."):], '.')+len("bench-ceiling.")+1:]]++
			})
			if err != nil {
				return err
			}
			sub.SetPendingLimits(-1, -1)
			if err := nc.Flush(); err != nil {
				return err
			}
			res, err := Ceiling(c, true, 20, 2, 40, 8)
			if err != nil {
				return err
			}
			if len(res.Latency) != 20 || res.Latency.P(0.5) <= 0 || res.Rate <= 0 || res.CPU <= 0 {
				return fmt.Errorf("the ceiling measured %d latencies (p50 %v), %v placements/s and %v of CPU each", len(res.Latency), res.Latency.P(0.5), res.Rate, res.CPU)
			}
			const placements = 20 + 2 + 2*40 // two warm up
			// The real subjects of one node's one GPU.
			want := map[string]int{"job.submit": placements, "node.node-0.batch": 2 * placements, "evt.gpu.node-0.gpu-0.status": placements,
				"evt.job.submitted": placements, "evt.job.queued": placements, "evt.sched.decision": placements,
				"evt.job.placed": placements, "evt.job.started": placements}
			deadline := time.Now().Add(10 * time.Second)
			for {
				mu.Lock()
				got := fmt.Sprint(bySuffix)
				mu.Unlock()
				if got == fmt.Sprint(want) {
					return nil
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("the ceiling sent %s for %d placements; want %s", got, placements, fmt.Sprint(want))
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPrintNarrowFitsTheTerminal (issue 45 item 7): the narrow layout
// keeps every line within the terminal's width and every row's case,
// figure and verdict.
func TestPrintNarrowFitsTheTerminal(t *testing.T) {
	tbl := Table{Machine: "test", Rows: []Row{
		{Section: "1 placement", Case: "binpack, 8 GPUs, in-process bus, a long case name that goes on", Figure: strings.Repeat("12,345/s ", 12), Target: "≥ 10,000/s", Verdict: "met"},
		{Section: "1 placement", Case: "spread", Figure: "1 ms", Target: "< 5 ms", Verdict: "MISSED"},
	}}
	var b strings.Builder
	tbl.PrintNarrow(&b, 60)
	for _, l := range strings.Split(b.String(), "\n") {
		if n := len([]rune(l)); n > 60 && !strings.HasPrefix(l, "gpusched bench") {
			t.Errorf("a line of %d cells: %q", n, l)
		}
	}
	for _, want := range []string{"1 placement", "binpack, 8 GPUs", "target: ≥ 10,000/s — met", "target: < 5 ms — MISSED"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("narrow table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestTheCeilingsMessagesAreAPlacementsSizes (issue 47): the ceiling's
// message sizes, kind by kind, and its bytes per placement are within
// 10 % of what the whole path's placements send on the bus, counted
// there: a change to a body's size that the ceiling did not follow fails
// here, before the ceiling's figures mean something else.
func TestTheCeilingsMessagesAreAPlacementsSizes(t *testing.T) {
	got, err := countReferencePlacements(context.Background(), Options{TempDir: t.TempDir()}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := CeilingMessages(referenceRound)
	t.Logf("on the bus: %s", got)
	t.Logf("the ceiling: %s", want)
	if off := Drift(got, want, 0.10); len(off) > 0 {
		t.Fatalf("the ceiling's messages drifted from a placement's by more than 10 %%:\n%s", strings.Join(off, "\n"))
	}
}
