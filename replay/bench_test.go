package replay

import (
	"context"
	"testing"

	"github.com/gpusched/gpusched/internal/tracedir"
	"github.com/gpusched/gpusched/policy"
)

// BenchmarkReplay times one run of the paper's protocol on the default
// openb workload (10,866 pods on 6,212 GPUs), offline on the pure core and
// live through the actors and the bus, per policy.
//
//	go test -run '^$' -bench Replay -benchtime 3x ./replay/
func BenchmarkReplay(b *testing.B) {

	nodes, pods := tracedir.Default(b)
	plan := Prepare(nodes, pods, 42, DefaultInflate)
	for _, name := range []string{"dotprod", "best-fit", "fgd"} {
		pol, _ := policy.Lookup[policy.Policy](name)
		b.Run("offline/"+name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := Offline(&plan, pol, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(len(plan.Pods)), "µs/pod")
		})
		b.Run("live/"+name, func(b *testing.B) {
			for b.Loop() {
				if _, _, _, err := Live(context.Background(), &plan, name, LiveOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
