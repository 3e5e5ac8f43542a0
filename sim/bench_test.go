package sim

import (
	"context"
	"testing"
	"time"

	"github.com/gpusched/gpusched/internal/tracedir"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/openb"
	"github.com/gpusched/gpusched/replay"
)

// BenchmarkCompare72h is the first target: 72 simulated hours of
// the reference cluster's default workload under four policies, one after
// another (target: under 10 s of wall time for all four).
func BenchmarkCompare72h(b *testing.B) {
	shape := referenceShape(b)
	for b.Loop() {
		var sim time.Duration
		for _, p := range []string{"binpack", "spread", "best-fit", "fgd"} {
			res, err := Run(context.Background(), Config{Shape: shape, Policy: p, Seed: 1, Rate: 6, Hours: 72,
				Interference: model.DefaultInterference})
			if err != nil {
				b.Fatal(err)
			}
			sim += res.Length
		}
		b.ReportMetric(sim.Hours(), "sim-hours/op")
	}
}

// BenchmarkTimedOpenb is the second target: the openb default trace (8,152
// pods over about 149 days on 1,213 nodes) replayed in time under FGD
// (target: under 60 s). Skipped without the trace.
func BenchmarkTimedOpenb(b *testing.B) {
	nodes, pods := tracedir.Default(b)
	shape, err := openb.Shape(nodes)
	if err != nil {
		b.Fatal(err)
	}
	arrivals, err := PodArrivals(pods)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := Run(context.Background(), Config{Shape: shape, Policy: "fgd", Seed: 1, Arrivals: arrivals,
			Workload: replay.Workload(pods), Interference: model.DefaultInterference})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.Wall.Seconds(), "run-s/op")
		b.ReportMetric(res.StartUp.Seconds(), "startup-s/op")
		b.ReportMetric(float64(res.Instants), "instants/op")
	}
}
