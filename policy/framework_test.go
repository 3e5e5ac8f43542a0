package policy

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// newestFirst is a queue order added the way docs/POLICIES.md says: a type
// and a Register call, in one file, nothing else touched.
type newestFirst struct{}

func (newestFirst) Name() string { return "newest-first" }
func (newestFirst) Less(a, b *Queued) bool {
	return a.Submitted.After(b.Submitted)
}

func init() { Register[QueueSort](newestFirst{}) }

// panics runs f and returns what it panicked with ("" when it did not).
func panics(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = r.(string)
		}
	}()
	f()
	return ""
}

// notAPlacement has a name and nothing a placement needs.
type notAPlacement struct{}

func (notAPlacement) Name() string { return "not-a-placement" }

// undeclared is an interface no one declared a point for.
type undeclared interface {
	Plugin
	Nothing()
}

// TestOneRegistryOneRule: every point's extensions go through Register,
// which refuses a duplicate name, an empty name and what the point's check
// refuses, and Lookup and Names answer from it.
func TestOneRegistryOneRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"a duplicate queue order", func() { Register[QueueSort](fifoOrder{}) }, `duplicate registration of queue order "fifo"`},
		{"a duplicate filter", func() { Register[Filter](capacity{}) }, `duplicate registration of filter "capacity"`},
		{"a duplicate placement policy", func() {
			bp, _ := Lookup[Policy]("binpack")
			Register(bp)
		}, `duplicate registration of policy "binpack"`},
		{"a placement that neither ranks nor scores", func() { Register[Policy](notAPlacement{}) }, "neither a GPURanker nor a NodeScorer"},
		{"a point never declared", func() { Lookup[undeclared]("x") }, "is not a declared extension point"},
		{"a second declaration", func() { DeclarePoint[Round]("round", "", nil) }, "declared twice"},
	} {
		if got := panics(tc.f); !strings.Contains(got, tc.want) {
			t.Errorf("%s: panicked with %q, want %q", tc.name, got, tc.want)
		}
	}
	if _, err := Lookup[Policy]("not-a-placement"); err == nil {
		t.Error("a refused extension was registered all the same")
	}
	// The queue order this file added is selectable, listed after the
	// default, and runs in a profile like the built-in ones.
	names := Names[QueueSort]()
	if names[0] != DefaultQueue || !slices.Contains(names, "newest-first") {
		t.Fatalf("queue orders %v: want the default first and newest-first among them", names)
	}
	p, err := NewProfile(ProfileConfig{Queue: "newest-first"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(0, 0)
	old, young := &Queued{Submitted: t0, Seq: 1}, &Queued{Submitted: t0.Add(time.Minute), Seq: 2}
	if p.Order(young, old) >= 0 {
		t.Error("newest-first: the younger job must wait ahead")
	}
	if _, err := NewProfile(ProfileConfig{Preempt: "lottery"}); err == nil || !strings.Contains(err.Error(), `unknown preemption rule "lottery" (known: fewest-victims, none)`) {
		t.Errorf("an unknown preemption rule: %v", err)
	}
	kinds := Points()
	for _, k := range []string{"queue order", "admission", "filter", "policy", "preemption rule", "round"} {
		if len(kinds[k]) == 0 {
			t.Errorf("point %q: no extensions (points: %v)", k, kinds)
		}
	}
}

// TestProfileRunsThePoints: a profile's admission, placement and round
// are the ones named, and what is not configured says yes.
func TestProfileRunsThePoints(t *testing.T) {
	p, err := NewProfile(ProfileConfig{Placement: "spread", Filters: "capacity"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Round != nil || p.Stop(demoState(), nil) != nil {
		t.Error("no rounds were asked for: the profile must have none")
	}
	if p.AdmitSubmit(&AdmitJob{Tenant: "x", GPUs: 100}) != nil || p.AdmitPlace(&AdmitJob{Tenant: "x", GPUs: 100}, Usage{GPUs: 100}) != nil {
		t.Error("no admission configured: every job must be admitted")
	}
	c := demoState()
	p.Apply(c)
	if FiltersString(c.Filters) != "capacity" || !c.ComputeBound {
		t.Errorf("applied: filters %s, compute bound %v; want capacity, true (spread binds capacity)", FiltersString(c.Filters), c.ComputeBound)
	}
	r := &Request{GPUs: 1, VRAM: 1 << 30, Util: 10}
	got, want := p.Place(c, r), Place(c, r, p.Placement)
	if len(got) == 0 || got[0].GPUs[0] != want[0].GPUs[0] {
		t.Errorf("profile placed %v, spread %v", got, want)
	}
	limited, _ := ParseTenantLimits("x=gpus:2")
	p.Admit = limited
	if st := p.AdmitSubmit(&AdmitJob{Tenant: "x", GPUs: 3}); st == nil || st.Code != Refuse || st.Field != "gpus" || st.Plugin != DefaultAdmit {
		t.Errorf("a job wider than its tenant's bound: %+v, want a refusal naming gpus", st)
	}
}
