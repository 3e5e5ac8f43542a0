package cluster_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/chaos"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/observer"
)

// TestChaosMonkey runs `cluster --chaos` (kills, hangs and partitions at
// simulated-time rates, seeded) on the reference cluster with its job mix:
// the monkey's faults happen (chaos events, GPU deaths), and the checker
// finds no violation.
func TestChaosMonkey(t *testing.T) {
	spec, err := chaos.ParseMonkey("kill=60/h,hang=20/h,partition=20/h,for=1500ms")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := startCluster(t, cluster.Config{
		Seed:  3,
		Chaos: &spec,
		Hardware: cluster.Hardware{
			Lease:          faultLease,
			Heartbeat:      faultLease / 5,
			RestartBackoff: 20 * time.Millisecond,
		},
		Arrivals: cluster.Arrivals{Rate: 60},
		Timing:   cluster.Timing{Speed: 600},
	})
	cc, err := nats.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	checker := observer.NewChecker()
	sub, err := observer.SubscribeChecker(cc, events.NewSubjects(""), checker, nopWriter{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the monkey to kill, hang and cut off GPUs", 30*time.Second, func() bool {
		s := checker.Summary()
		return s.Faults >= 10 && s.GPUDeaths >= 5
	})
	observer.DrainChecker(cc, sub)
	s := checker.Summary()
	if len(s.Violations) > 0 {
		t.Fatalf("%d violations under the monkey; the first: %s", len(s.Violations), s.Violations[0])
	}
}
