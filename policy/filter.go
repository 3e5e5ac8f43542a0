package policy

import (
	"fmt"
	"strings"
)

// Filter is the filter extension point: a constraint of its own beside the
// built-in fit (VRAM, share, CPU and memory, models, pins, holds). A GPU a
// filter in force refuses is not a candidate: not for placement, nor for
// a hold, nor in a round's scratch placement; Why names the filter when it
// is what stands in the way. Filters do not bind the choice of victims
// (their room is judged without the victims, which a filter cannot see).
// With a filter in force a placement scans the cluster instead of asking
// the index, which cannot know a filter's rule. `--filter` chooses them,
// and sched.strategy {"filters":"capacity"} live.
type Filter interface {
	Plugin
	// Filter says why r may not go on g, the cluster being c now (a
	// Wait); nil lets it.
	Filter(c *Cluster, g *GPU, r *Request) *Status
}

var _ = DeclarePoint[Filter]("filter", "", nil)

// ParseFilters reads a comma-separated list of filter names; "" and
// "none" are no filter.
func ParseFilters(list string) ([]Filter, error) {
	if list == "" || list == "none" {
		return nil, nil
	}
	var out []Filter
	seen := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if seen[name] {
			return nil, fmt.Errorf("filter %q named twice", name)
		}
		seen[name] = true
		f, err := Lookup[Filter](name)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// FiltersString is the list ParseFilters reads back ("none" for none).
func FiltersString(fs []Filter) string {
	if len(fs) == 0 {
		return "none"
	}
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name()
	}
	return strings.Join(names, ",")
}

func init() {
	Register[Filter](capacity{})
}

// capacity keeps a GPU's compute within capacity under any policy: a job
// goes on a GPU only if the utilisation of the jobs there plus its own
// stays within the cluster's UtilLimit (100 % unless oversubscribed; a
// time-shared GPU past 100 % slows every job on it). The CapacityBound
// policies have this rule built in; the filter puts it on the paper's.
type capacity struct{}

func (capacity) Name() string { return "capacity" }

// overCapacity is capacity's no, one for every GPU it refuses (a Status
// is not changed after it is made, so it may be shared).
var overCapacity = &Status{Code: Wait, Plugin: "capacity", Reason: "its compute would pass the cluster's limit"}

// Filter: the GPU's util (percent, summed over its jobs) plus the job's.
func (capacity) Filter(c *Cluster, g *GPU, r *Request) *Status {
	if c.ComputeFits(g, r) {
		return nil
	}
	return overCapacity
}

// allowed reports whether every filter in force lets r go on g, and
// otherwise names the first that does not.
func (c *Cluster) allowed(g *GPU, r *Request) (bool, string) {
	if c.Throughputs != nil && !c.throughputAllows(g, r) {
		return false, ThroughputRule
	}
	for _, f := range c.Filters {
		if st := f.Filter(c, g, r); st != nil {
			return false, st.Plugin
		}
	}
	return true, ""
}
