package sim

import (
	"bytes"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/chaos"
	"github.com/gpusched/gpusched/model"
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
		{"hang=4/h,for=15m", `"change":"woke"`},
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
			t.Log(fmt.Sprintf("%s: %d events, %d saying %s", c.spec, total, said, c.says))
		})
	}
}
