package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/events"

	"github.com/gpusched/gpusched/internal/tracedir"
	"github.com/gpusched/gpusched/pal"
	"github.com/gpusched/gpusched/sim"
)

// TestPALLiveIsOffline (issue 44): a PAL run live — the jobs submitted
// over the bus, the scheduler stepping the artifact's rounds, the GPU
// actors running each gang at its slowest GPU's pace × the locality
// penalty — writes the per-job CSV of the offline run byte for byte, the
// artifact's own for these reference runs (PAL and PM-First on the window
// of workload 8 that tells them apart, and the sticky Packed frame with
// its preemptions).
func TestPALLiveIsOffline(t *testing.T) {
	dir := tracedir.PAL(t)
	data, err := pal.LoadData(dir)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := pal.ReadConfigs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"w8_fifo_PAL", "w8_fifo_PMFirst", "w8_fifo_PackedS"} {
		t.Run(name, func(t *testing.T) {
			var ref *pal.Reference
			for i := range refs {
				if refs[i].Name == name {
					ref = &refs[i]
				}
			}
			if ref == nil {
				t.Fatalf("%s is not in configs.txt", name)
			}
			trace, err := pal.ReadTrace(pal.TracePath(dir, ref.Workload), data.Models)
			if err != nil {
				t.Fatal(err)
			}
			d, err := pal.NewDriver(data, trace, ref.Config)
			if err != nil {
				t.Fatal(err)
			}
			// Every pace a placement gave a job in the offline run: its
			// slowest multiplier × locality penalty, after each round.
			paces := map[string][]float64{}
			live0 := pal.NewLive(d, data)
			for gen := pal.NewGenerator(trace, ref.Config); !d.Done(); {
				d.Step(gen)
				for _, task := range live0.Tasks() {
					pm, loc := d.Slowdown(task.Jobs[0])
					name := "job-" + strconv.Itoa(task.Jobs[0])
					paces[name] = append(paces[name], pm*loc)
				}
			}
			offline := d.Result()
			// Every rate a GPU reports for a running job must be the job's
			// nominal one ÷ its gang's pace in some round of the offline
			// run: 1 / (iteration time × slowest multiplier × locality).
			iter := map[string]float64{}
			for i, tj := range trace {
				iter["job-"+strconv.Itoa(i)] = data.Models[tj.Model].IterTime
			}
			var bad []string
			rates, across := 0, 0
			watch := func(subject string, raw []byte) {
				if !strings.HasSuffix(subject, ".status") {
					return
				}
				var ev struct {
					Data events.GPUStatus `json:"data"`
				}
				if json.Unmarshal(raw, &ev) != nil {
					return
				}
				for _, gj := range ev.Data.Jobs {
					if gj.State != events.GPUJobRunning || iter[gj.Name] == 0 {
						continue
					}
					rates++
					ok := false
					for _, p := range paces[gj.Name] {
						if want := 1 / iter[gj.Name] / p; math.Abs(gj.Rate-want) <= 1e-9*want {
							ok = true
							if p > 1.5 {
								across++ // the locality penalty (1.7) is in it
							}
						}
					}
					if !ok && len(bad) < 5 {
						bad = append(bad, gj.Name+" at "+strconv.FormatFloat(gj.Rate, 'g', -1, 64)+" it/s")
					}
				}
			}
			live, err := sim.RunPAL(context.Background(), data, trace, ref.Config, sim.PALOptions{Events: watch})
			if err != nil {
				t.Fatal(err)
			}
			if len(bad) > 0 || rates == 0 || across == 0 {
				t.Errorf("%d running rates heard, %d across nodes; not at their gang's pace: %v", rates, across, bad)
			}
			var a, b bytes.Buffer
			if err := pal.WriteCSV(&a, offline); err != nil {
				t.Fatal(err)
			}
			if err := pal.WriteCSV(&b, live.Result); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("the live run's CSV differs from the offline run's:\n%s\nvs\n%s", b.String(), a.String())
			}
			if live.Result.Utilisation != offline.Utilisation || live.Result.Rounds != offline.Rounds {
				t.Errorf("live: %d rounds, utilisation %v; offline %d, %v", live.Result.Rounds, live.Result.Utilisation, offline.Rounds, offline.Utilisation)
			}
		})
	}
}
