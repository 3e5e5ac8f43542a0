package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/actors/jobgen"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/model"
)

// TestTheDemoStartsWhereTheDemoShowsIt: a live run of the reference shape
// starts the demo's five jobs on the GPUs the demo shows them on, through
// the normal protocol (pinned submissions), whatever the policy — here
// spread, which alone would put them on five different idle GPUs in id
// order. A shape without those GPUs starts them by the policy instead.
func TestTheDemoStartsWhereTheDemoShowsIt(t *testing.T) {
	for _, tc := range []struct {
		gpus   string
		pinned bool
	}{{model.DefaultGPUs, true}, {"4xV100-32GB,2xA100-80GB", false}} {
		t.Run(tc.gpus, func(t *testing.T) {
			shape, err := model.ParseGPUs(tc.gpus)
			if err != nil {
				t.Fatal(err)
			}
			_, nc := startCluster(t, cluster.Config{
				Hardware:   cluster.Hardware{Shape: shape},
				Scheduling: cluster.Scheduling{Policy: "spread", StarvationAge: 1000 * time.Hour},
				Arrivals: cluster.Arrivals{
					Rate:     0.001,
					Demo:     true,
					PinDemo:  true,
					JobLimit: 5,
				},
			})
			where := map[string]string{}
			waitFor(t, "the demo's five jobs running", 10*time.Second, func() bool {
				list := req(t, nc, "gpusched.job.list", `{"state":"running"}`)
				jobs, _ := list["jobs"].([]any)
				for _, j := range jobs {
					j := j.(obj)
					name := j["name"].(string)
					where[name[:strings.LastIndexByte(name, '-')]] = j["gpu_ids"].([]any)[0].(string)
				}
				return len(where) == 5
			})
			for tmpl, gpu := range jobgen.DemoGPUs {
				if got := where[tmpl]; (got == gpu) != tc.pinned {
					t.Errorf("%s on %s (pinned %v; the demo shows it on %s)", tmpl, got, tc.pinned, gpu)
				}
			}
		})
	}
}
