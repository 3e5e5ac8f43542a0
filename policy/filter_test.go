package policy

import (
	"strings"
	"testing"

	"github.com/gpusched/gpusched/model"
)

// TestCapacityFilterKeepsGPUsWithinTheirCompute: on the demo state binpack
// stacks a 30 % job on the busiest GPU with room (GPT-fine-tune's, at
// 82 %), to 112 %; with the capacity filter it goes to the busiest GPU
// that stays within 100 %, for every policy, indexed or not.
func TestCapacityFilterKeepsGPUsWithinTheirCompute(t *testing.T) {
	r := &Request{GPUs: 1, VRAM: int64(2 * model.GB), Util: 30}
	c := demoState()
	if got := Place(c, r, mustPolicy(t, "binpack")); got[0].GPUs[0] != "gpu-0" {
		t.Fatalf("binpack alone: %v, want gpu-0 (GPT-fine-tune's, 38 of 40 GB, at 82 %%)", got[0].GPUs)
	}
	capFilter, err := ParseFilters("capacity")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		c := demoState()
		c.Index = NewIndex()
		c.Filters = capFilter
		got := Place(c, r, mustPolicy(t, name))
		if len(got) == 0 {
			t.Errorf("%s with the capacity filter placed nothing", name)
		}
		for _, p := range got {
			if g := c.GPUs[p.GPUIdx[0]]; g.Util+r.Util > 100 {
				t.Errorf("%s with the capacity filter offered %s at %.0f%% + 30%%", name, g.ID, g.Util)
			}
		}
	}
	// A job that only fits past 100 % everywhere: Why names the filter.
	c = demoState()
	c.Filters = capFilter
	big := &Request{GPUs: 1, VRAM: int64(2 * model.GB), Util: 90}
	for _, g := range c.GPUs {
		g.Util = max(g.Util, 20)
	}
	if got := Place(c, big, mustPolicy(t, "spread")); len(got) != 0 {
		t.Fatalf("placed past capacity: %v", got[0].GPUs)
	}
	if why := Why(c, big); !strings.Contains(why, "capacity filter refuses the 8 GPUs") {
		t.Fatalf("reason %q does not name the filter", why)
	}
}

func TestParseFilters(t *testing.T) {
	for _, bad := range []string{"capacity,capacity", "gravity", "capacity,"} {
		if _, err := ParseFilters(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, none := range []string{"", "none"} {
		if fs, err := ParseFilters(none); err != nil || len(fs) != 0 || FiltersString(fs) != "none" {
			t.Errorf("%q: %v %v", none, fs, err)
		}
	}
}
