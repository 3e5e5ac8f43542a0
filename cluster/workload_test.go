package cluster_test

import (
	"sort"
	"testing"
	"time"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/simclock"
)

// validNext is the job lifecycle of DESIGN §3 as event types.
var validNext = map[string][]string{
	"":          {"submitted"},
	"submitted": {"queued", "rejected"},
	"queued":    {"placed", "cancelled"},
	"placed":    {"started"},
	"started":   {"completed", "preempted", "cancelled", "lost"},
	"preempted": {"queued"},
	"lost":      {"queued"},
}

// TestSeededWorkloadKeepsInvariants runs the job generator (seeded) for
// many simulated hours on the reference cluster and checks, from the event
// stream alone, that no GPU's VRAM is ever over-allocated or overlapping,
// that no job runs in two places, that every job follows the lifecycle,
// and that every accepted job is accounted for and ends completed.
func TestSeededWorkloadKeepsInvariants(t *testing.T) {
	const jobs = 120
	for _, pol := range []string{"binpack", "spread"} {
		t.Run(pol, func(t *testing.T) {
			// 12 simulated hours of arrivals at 10 jobs/hour (more than the
			// cluster serves, so jobs queue and get preempted), on a virtual
			// clock, so that the run is the same however loaded the machine
			// is; it stops (and the cluster then stands still) at 200 hours.
			epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := simclock.NewVirtual(epoch)
			clock.StopAt(epoch.Add(200 * time.Hour))
			c, nc := startCluster(t, cluster.Config{
				Seed:       2,
				Scheduling: cluster.Scheduling{Policy: pol},
				Arrivals: cluster.Arrivals{
					Rate:          10,
					Demo:          true,
					JobLimit:      jobs,
					HoldGenerator: true,
				},
				Timing: cluster.Timing{
					Clock:         clock,
					Epoch:         epoch,
					MetricsPeriod: time.Hour,
				},
			})
			log := recordEvents(t, nc, "gpusched.evt.>")
			c.StartGenerator()
			waitFor(t, "every generated job to complete", 60*time.Second, func() bool {
				rep := req(t, nc, "gpusched.job.list", `{"state":"completed"}`)
				return rep["total"].(float64) == jobs
			})
			// The job.list reply can overtake the last events on the way to our subscription.
			waitFor(t, "every completed event", 10*time.Second, func() bool {
				return len(log.find("gpusched.job.completed", "")) == jobs
			})
			checkInvariants(t, log.snapshot(), jobs)
			if n := len(log.find("gpusched.job.preempted", "")); n == 0 {
				t.Fatal("the workload preempted nothing: it does not exercise preemption")
			} else {
				t.Logf("%d preemptions", n)
			}
			all := req(t, nc, "gpusched.job.list", `{}`)
			if all["total"].(float64) != jobs {
				t.Fatalf("job.list has %v jobs, want %d", all["total"], jobs)
			}
			snap := req(t, nc, "gpusched.cluster.snapshot", `{"page":0}`)
			if sum := snap["summary"].(obj); sum["vram_used"].(float64) != 0 || sum["jobs_running"].(float64) != 0 {
				t.Fatalf("after every job completed the cluster still shows %v", sum)
			}
		})
	}
}

func checkInvariants(t *testing.T, evs []obj, wantJobs int) {
	t.Helper()
	running := map[string]map[string]bool{} // GPU → running jobs in its latest status
	state := map[string]string{}            // job → last lifecycle event
	statuses := 0
	for _, ev := range evs {
		typ, _ := ev["type"].(string)
		data, _ := ev["data"].(obj)
		switch typ {
		case "gpusched.gpu.status":
			statuses++
			gpu := data["gpu"].(string)
			total := data["vram_total"].(float64)
			type span struct{ off, size float64 }
			var spans []span
			var used float64
			now := map[string]bool{}
			for _, j := range data["jobs"].([]any) {
				j := j.(obj)
				spans = append(spans, span{j["offset"].(float64), j["vram"].(float64)})
				used += j["vram"].(float64)
				if j["state"] == "running" {
					now[j["job_id"].(string)] = true
				}
			}
			if used > total {
				t.Fatalf("%s: %v bytes allocated of %v", gpu, used, total)
			}
			sort.Slice(spans, func(a, b int) bool { return spans[a].off < spans[b].off })
			for i := range spans {
				if spans[i].off < 0 || spans[i].off+spans[i].size > total {
					t.Fatalf("%s: allocation [%v,+%v) outside %v", gpu, spans[i].off, spans[i].size, total)
				}
				if i > 0 && spans[i].off < spans[i-1].off+spans[i-1].size {
					t.Fatalf("%s: allocations overlap at %v", gpu, spans[i].off)
				}
			}
			running[gpu] = now
			for job := range now {
				for other, set := range running {
					if other != gpu && set[job] {
						t.Fatalf("job %s runs on %s and %s at once", job, gpu, other)
					}
				}
			}
		default:
			const prefix = "gpusched.job."
			if len(typ) <= len(prefix) || typ[:len(prefix)] != prefix {
				continue
			}
			next := typ[len(prefix):]
			job := ev["subject"].(string)
			ok := false
			for _, n := range validNext[state[job]] {
				ok = ok || n == next
			}
			if !ok {
				t.Fatalf("job %s (%v): %s after %q breaks the lifecycle", job, data["name"], next, state[job])
			}
			state[job] = next
		}
	}
	if statuses == 0 {
		t.Fatal("no GPU status events seen")
	}
	if len(state) != wantJobs {
		t.Fatalf("events for %d jobs, want %d", len(state), wantJobs)
	}
	for job, s := range state {
		if s != "completed" {
			t.Errorf("job %s ended the run %s, want completed", job, s)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("checked %d events, %d GPU statuses, %d jobs", len(evs), statuses, len(state))
}
