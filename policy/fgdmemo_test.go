package policy

import (
	"testing"

	"github.com/gpusched/gpusched/model"
)

// TestFGDDoesNotRememberAGPUThatWentDown: a GPU made suspect (not alive,
// nothing else changed: no answer, or its supervisor said it is down) is
// not chosen again from fgd's per-node memo. Before, the remembered choice
// kept naming it, and a virtual run retried it for ever at one instant.
func TestFGDDoesNotRememberAGPUThatWentDown(t *testing.T) {
	c := demoState()
	c.Memo = NewMemo() // as the scheduler's view has one
	c.Workload = TypicalWorkload(map[ClassKey]int{{CPUMilli: 4000, Milli: 500, GPUs: 1}: 3, {CPUMilli: 4000, Milli: 1000, GPUs: 1}: 1})
	p, err := Lookup[Policy]("fgd")
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{JobID: "j", Priority: model.PriorityHigh, GPUs: 1, VRAM: int64(4 * model.GiB), Util: 10, CPUMilli: 4000}
	first := Place(c, r, p)
	if len(first) == 0 {
		t.Fatal("fgd placed nothing on the demo state")
	}
	chosen := first[0].GPUIdx[0]
	g := c.GPUs[chosen]
	g.Alive = false
	c.Touch(g)
	for _, pl := range Place(c, r, p) {
		for _, gi := range pl.GPUIdx {
			if gi == chosen {
				t.Fatalf("fgd still offers %s after it went down: %+v", g.ID, pl)
			}
		}
	}
}
