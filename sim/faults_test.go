package sim

import (
	"bytes"
	"encoding/json"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpusched/gpusched/actors/node"
	"github.com/gpusched/gpusched/actors/scheduler"
	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/chaos"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/observer"
)

// TestEveryFaultKindOnAVirtualClockRepeats (issue 23 item 1): hangs,
// partitions, delays and drops on the virtual clock, drawn from the seed
// and lasting simulated time. For each kind the same seed gives the same
// per-job results and the same count of every event subject, on two
// processors and on one; and the faults bite (the per-job results differ
// from the same seed's run without faults, and the GPU events say so:
// a hung GPU wakes, a partitioned one rejoins). So does every kind at
// once, kills included ("mixed": simtest draws them together).
func TestEveryFaultKindOnAVirtualClockRepeats(t *testing.T) {
	base := Config{Shape: referenceShape(t), Policy: "binpack", Seed: 7, Rate: 8, Hours: 6, Drain: 6 * time.Hour,
		Interference: model.DefaultInterference}
	_, calm := runConfig(t, base)
	for _, c := range []struct{ spec, says string }{
		{"hang=4/h,for=5m", `"change":"woke"`}, // shorter than the lease: the GPU is not declared dead
		{"partition=4/h,for=15m", `"change":"rejoined"`},
		{"delay=4/h,delay=3s,for=15m", ""},
		{"drop=4/h,drop=0.5,for=15m", ""},
		{"kill=2/h,hang=2/h,partition=2/h,delay=2/h,drop=2/h,for=15m", ""},
	} {
		name := strings.SplitN(c.spec, "=", 2)[0]
		if strings.Count(c.spec, "/h") > 1 {
			name = "mixed"
		}
		t.Run(name, func(t *testing.T) {
			ms, err := chaos.ParseMonkey(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			cfg := base
			cfg.Chaos = &ms
			run := func() ([]byte, map[string]int, int) {
				counts, said := map[string]int{}, 0
				cfg.Events = func(subject string, data []byte) {
					counts[subject]++
					if c.says != "" && bytes.Contains(data, []byte(c.says)) {
						said++
					}
				}
				res, csv := runConfig(t, cfg)
				if res.LooseArms > 0 {
					t.Errorf("%s: %d timers armed after their work let the clock go", c.spec, res.LooseArms)
				}
				return csv, counts, said
			}
			csvA, countsA, said := run()
			procs := runtime.GOMAXPROCS(1)
			csvB, countsB, _ := run()
			runtime.GOMAXPROCS(procs)
			if !bytes.Equal(csvA, csvB) {
				t.Fatalf("the same seed with %s gave different per-job results:\n%s", c.spec, firstDiff(csvA, csvB))
			}
			if !maps.Equal(countsA, countsB) {
				for _, s := range slices.Sorted(maps.Keys(countsA)) {
					if countsA[s] != countsB[s] {
						t.Errorf("%s: %d events, then %d", s, countsA[s], countsB[s])
					}
				}
				t.Fatalf("the same seed with %s gave different event counts", c.spec)
			}
			if bytes.Equal(csvA, calm) {
				t.Errorf("%s changed no job's result: the faults did not bite", c.spec)
			}
			if c.says != "" && said == 0 {
				t.Errorf("%s: no GPU event says %s", c.spec, c.says)
			}
			total := 0
			for _, n := range countsA {
				total += n
			}
			t.Logf("%s: %d events, %d saying %s", c.spec, total, said, c.says)
		})
	}
}

// TestOnAVirtualClockALeaseOutlivesAShortHangAndNotALongOne (issue 23
// item 1): leases and heartbeats run in simulated time. A hang longer
// than the lease has the scheduler declare the GPU dead (gpu.down,
// lease-expired) between the lease less a heartbeat period and the lease
// after it began (its last renewal came at the last heartbeat before the
// hang), and it rejoins empty when it wakes; a hang no longer than a
// heartbeat period kills nothing. Nothing is lost either way. The monkey
// never hangs a GPU that is hung already (a hang's end is drawn past the
// next hang of the same GPU only by chance; the seed below has none).
func TestOnAVirtualClockALeaseOutlivesAShortHangAndNotALongOne(t *testing.T) {
	const lease, beat = core.DefaultVirtualLease, node.DefaultVirtualHeartbeat
	for _, c := range []struct {
		spec  string
		dies  bool
		hangs time.Duration
	}{
		{"hang=3/h,for=30m", true, 30 * time.Minute},
		// A hang no longer than a heartbeat period misses at most one
		// renewal: the GPU keeps its lease (and does not fence itself,
		// which it does a fifth of the lease before the lease ends).
		{"hang=3/h,for=2m", false, 2 * time.Minute},
	} {
		t.Run(c.spec, func(t *testing.T) {
			ms, err := chaos.ParseMonkey(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			type mark struct {
				at  time.Time
				gpu string
			}
			var mu sync.Mutex
			var hangs, deaths []mark
			rejoined := 0
			var last time.Time // the last event's instant
			cfg := Config{Shape: referenceShape(t), Policy: "binpack", Seed: 3, Rate: 6, Hours: 6, Chaos: &ms,
				Interference: model.DefaultInterference}
			cfg.Events = func(subject string, data []byte) {
				ev, fe := events.DecodeEvent(data)
				if fe != nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				last = maxTime(last, ev.SimTime)
				switch {
				case strings.HasSuffix(subject, ".chaos.hang"):
					var ce events.ChaosEvent
					if json.Unmarshal(ev.Data, &ce) == nil && ce.Failed == "" {
						hangs = append(hangs, mark{ev.SimTime, ce.GPU})
					}
				case strings.HasSuffix(subject, ".down"), strings.HasSuffix(subject, ".up"):
					var st events.GPUStatus
					if json.Unmarshal(ev.Data, &st) != nil {
						return
					}
					if st.Change == events.ChangeLeaseExpired && st.GPU != "" {
						deaths = append(deaths, mark{ev.SimTime, st.GPU})
					}
					if st.Change == events.ChangeRejoined {
						rejoined++
					}
				}
			}
			res, csv := runConfig(t, cfg)
			if res.LooseArms > 0 {
				t.Errorf("%d timers armed after their work let the clock go", res.LooseArms)
			}
			if len(hangs) < 5 {
				t.Fatalf("only %d hangs in 6 hours at 3 an hour", len(hangs))
			}
			for _, j := range res.Jobs {
				if !j.Completed() {
					t.Errorf("job %s ended %s, want completed", j.Name, j.State)
				}
			}
			// A hang of a GPU hung already makes one longer hang of it.
			type episode struct {
				gpu        string
				start, end time.Time
			}
			var eps []episode
			slices.SortStableFunc(hangs, func(a, b mark) int { return a.at.Compare(b.at) })
			for _, h := range hangs {
				merged := false
				for i := range eps {
					if e := &eps[i]; e.gpu == h.gpu && h.at.Before(e.end) {
						e.end = maxTime(e.end, h.at.Add(c.hangs))
						merged = true
					}
				}
				if !merged {
					eps = append(eps, episode{h.gpu, h.at, h.at.Add(c.hangs)})
				}
			}
			if !c.dies {
				for _, e := range eps {
					if e.end.Sub(e.start) > beat {
						t.Fatalf("the seed hangs %s for %s, longer than a heartbeat period: choose another", e.gpu, e.end.Sub(e.start))
					}
				}
				if len(deaths) > 0 || rejoined > 0 {
					t.Fatalf("%s: %d GPUs declared dead, %d rejoined; a hang no longer than a heartbeat period (%s) kills none", c.spec, len(deaths), rejoined, beat)
				}
				return
			}
			// Each hang ends in one death, within the window, and a rejoin
			// when it wakes (unless the run ended first).
			explained, woke := 0, 0
			for _, e := range eps {
				if e.end.Before(last) {
					woke++
				}
				for _, d := range deaths {
					if d.gpu == e.gpu && d.at.After(e.start.Add(lease-beat)) && !d.at.After(e.start.Add(lease)) {
						explained++
						break
					}
				}
			}
			if explained != len(eps) || len(deaths) != len(eps) || rejoined != woke {
				t.Fatalf("%d hangs (%d once merged) of %s, %d lease deaths (%d in the window lease-beat..lease after a hang began), %d rejoined of %d woken:\nhangs %v\ndeaths %v",
					len(hangs), len(eps), c.hangs, len(deaths), explained, rejoined, woke, eps, deaths)
			}
			t.Logf("%d hangs (%d once merged), %d lease deaths, %d rejoined, %d bytes of results", len(hangs), len(eps), len(deaths), rejoined, len(csv))
		})
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestAMonkeyStopsAtItsUntil: until=2h draws faults in the first two
// simulated hours of a run and none after (simtest's cases fault while
// jobs arrive and drain in peace).
func TestAMonkeyStopsAtItsUntil(t *testing.T) {
	ms, err := chaos.ParseMonkey("kill=4/h,hang=4/h,for=5m,until=2h")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var before, after int
	cfg := Config{Shape: referenceShape(t), Policy: "binpack", Seed: 5, Rate: 6, Hours: 6, Chaos: &ms,
		Interference: model.DefaultInterference}
	cfg.Events = func(subject string, data []byte) {
		if !strings.Contains(subject, ".evt.chaos.") {
			return
		}
		ev, fe := events.DecodeEvent(data)
		if fe != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ev.SimTime.Sub(Epoch) < 2*time.Hour {
			before++
		} else {
			after++
		}
	}
	runConfig(t, cfg)
	if before < 4 || after > 0 {
		t.Fatalf("%d faults in the first 2 h (at 8 an hour), %d after; want several, then none", before, after)
	}
}

// TestAVirtualClockHangsAndCutsOffTheScheduler (issue 43 item 4): the
// monkey draws hang-scheduler and partition-scheduler on a virtual clock.
// Each is done (none fails), simulated time goes on past them (a hung
// loop keeps taking its messages without handling them, so nothing holds
// the clock), the run reaches its end, and the same seed gives the same
// per-job results twice.
func TestAVirtualClockHangsAndCutsOffTheScheduler(t *testing.T) {
	ms, err := chaos.ParseMonkey("hang-scheduler=4/h,partition-scheduler=4/h,for=5m,until=2h")
	if err != nil {
		t.Fatal(err)
	}
	run := func() (map[string]int, *Result, []byte) {
		var mu sync.Mutex
		done := map[string]int{}
		cfg := Config{Shape: referenceShape(t), Policy: "binpack", Seed: 5, Rate: 6, Hours: 3, Chaos: &ms,
			Interference: model.DefaultInterference}
		cfg.Events = func(subject string, data []byte) {
			if !strings.Contains(subject, ".evt.chaos.") {
				return
			}
			var ev struct {
				Data events.ChaosEvent `json:"data"`
			}
			if json.Unmarshal(data, &ev) != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if ev.Data.Failed != "" {
				t.Errorf("%s failed: %s", ev.Data.Action, ev.Data.Failed)
				return
			}
			done[ev.Data.Action]++
		}
		res, csv := runConfig(t, cfg)
		return done, res, csv
	}
	done, res, csvA := run()
	if done[events.ChaosHangScheduler] == 0 || done[events.ChaosPartitionScheduler] == 0 {
		t.Fatalf("faults done %v, want both scheduler faults drawn and done", done)
	}
	if res.Length < 3*time.Hour {
		t.Fatalf("the run stopped at %s", res.Length)
	}
	if _, _, csvB := run(); !bytes.Equal(csvA, csvB) {
		t.Fatalf("the same seed gave different per-job results:\n%s", firstDiff(csvA, csvB))
	}
}

// TestAVirtualClockFailsTheSchedulerOverToAStandby: failover-scheduler
// drawn by a seeded monkey over three simulated hours. Each failover's
// standby says sched.up exactly three quarters of a lease (simulated)
// after the cut; the cut-off scheduler publishes nothing after the cut
// (what it kept is dropped, never sent); the live checker, fed every
// event, finds no violation and every job ends; and two runs of the seed
// give the same per-job results.
func TestAVirtualClockFailsTheSchedulerOverToAStandby(t *testing.T) {
	ms, err := chaos.ParseMonkey("failover-scheduler=2/h,kill=1/h,until=3h")
	if err != nil {
		t.Fatal(err)
	}
	take := scheduler.LeaderTakeOver(core.DefaultVirtualLease)
	run := func() []byte {
		var mu sync.Mutex
		checker := observer.NewChecker()
		var cuts []time.Time                // each failover's instant
		var ups []time.Time                 // each standby's sched.up
		cutSource := map[string]time.Time{} // the cut-off scheduler's source → the cut
		var late []string
		lastSource := ""
		cfg := Config{Shape: referenceShape(t), Policy: "binpack", Seed: 11, Rate: 6, Hours: 3, Chaos: &ms,
			Interference: model.DefaultInterference, Drain: DefaultDrain}
		cfg.Events = func(subject string, data []byte) {
			ev, fe := events.DecodeEvent(data)
			if fe != nil {
				t.Errorf("malformed event on %s: %v", subject, fe)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			checker.Feed(subject, ev)
			if strings.HasPrefix(ev.Source, "/scheduler/") {
				if at, ok := cutSource[ev.Source]; ok && ev.SimTime.After(at) {
					late = append(late, ev.Type+" from "+ev.Source+" at "+ev.SimTime.Format(time.TimeOnly))
				}
				lastSource = ev.Source
			}
			switch {
			case strings.HasSuffix(ev.Type, "chaos."+events.ChaosFailoverScheduler):
				var ce events.ChaosEvent
				if json.Unmarshal(ev.Data, &ce) == nil && ce.Failed != "" {
					// Drawn while one was under way: refused, and said so
					// (after the event that announced it).
					if !strings.Contains(ce.Failed, "failing over to a standby already") {
						t.Errorf("failover refused: %s", ce.Failed)
					}
					cuts = cuts[:len(cuts)-1]
					return
				}
				cuts = append(cuts, ev.SimTime)
				if _, ok := cutSource[lastSource]; !ok {
					cutSource[lastSource] = ev.SimTime
				}
			case strings.HasSuffix(ev.Type, "sched.up") && strings.Contains(string(ev.Data), "a standby took the control plane over"):
				ups = append(ups, ev.SimTime)
			}
		}
		_, csv := runConfig(t, cfg)
		mu.Lock()
		defer mu.Unlock()
		if len(cuts) < 2 || len(ups) != len(cuts) {
			t.Fatalf("%d failovers and %d take-overs, want at least 2 and one each", len(cuts), len(ups))
		}
		for i := range cuts {
			if got := ups[i].Sub(cuts[i]); got != take {
				t.Errorf("failover %d: the standby took over %s after the cut, want %s", i+1, got, take)
			}
		}
		for _, l := range late {
			t.Errorf("the cut-off scheduler published after its cut: %s", l)
		}
		sum := checker.Summary()
		for _, v := range sum.Violations {
			t.Errorf("invariant violated: %v", v)
		}
		if len(sum.Stuck) > 0 {
			t.Errorf("jobs never ended: %v", sum.Stuck)
		}
		return csv
	}
	if a, b := run(), run(); !bytes.Equal(a, b) {
		t.Fatalf("the same seed gave different per-job results:\n%s", firstDiff(a, b))
	}
}
