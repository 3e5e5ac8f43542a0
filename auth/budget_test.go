package auth

import (
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/model"
)

func TestParseEventBudget(t *testing.T) {
	b, err := ParseEventBudget("256KiB/s,16MiB,cool-off=5m")
	if err != nil || b.Rate != 256*model.KiB || b.Burst != 16*model.MiB || b.CoolOff != 5*time.Minute || b.Off {
		t.Fatalf("%+v %v", b, err)
	}
	if back, err := ParseEventBudget(b.String()); err != nil || back != b {
		t.Fatalf("%s reads back as %+v (%v)", b, back, err)
	}
	if b, err := ParseEventBudget("off"); err != nil || !b.Off {
		t.Fatalf("off: %+v %v", b, err)
	}
	for in, want := range map[string]string{
		"1MiB,16MiB":               "must end in /s",
		"1MiB/s":                   "want RATE/s,BURST",
		"0/s,16MiB":                "is not a size a second",
		"1MiB/s,lots":              "is not a size",
		"1MiB/s,16MiB,cool-off=-1": "cool-off=DURATION",
		"1MiB/s,16MiB,wait=1m":     "cool-off=DURATION",
	} {
		if _, err := ParseEventBudget(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", in, err, want)
		}
	}
}

// TestBudgetsCutANodeOffAtItsBurstAndRefillAtItsRate: the token bucket
// per node, the cool-off doubling at each cut up to MaxCoolOff, and a
// readmitted node starting on a full budget; one node's bytes never count
// against another's.
func TestBudgetsCutANodeOffAtItsBurstAndRefillAtItsRate(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	b := NewBudgets(EventBudget{Rate: 1000, Burst: 10_000, CoolOff: time.Minute})
	if cut, _ := b.Charge("a", 10_000, t0); cut {
		t.Fatal("a node was cut off at exactly its burst")
	}
	if cut, _ := b.Charge("b", 9_000, t0); cut {
		t.Fatal("node b was charged for node a's bytes")
	}
	// Two seconds refill 2,000 bytes.
	if cut, _ := b.Charge("a", 2_000, t0.Add(2*time.Second)); cut {
		t.Fatal("the refill at the rate was not counted")
	}
	cut, coolOff := b.Charge("a", 1, t0.Add(2*time.Second))
	if !cut || coolOff != time.Minute {
		t.Fatalf("one byte past the budget: cut %v for %s, want cut for 1m", cut, coolOff)
	}
	if cut, _ := b.Charge("a", 1<<30, t0.Add(3*time.Second)); cut {
		t.Fatal("a node already cut off was cut again")
	}
	want := []time.Duration{2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute, time.Hour, time.Hour}
	for i, w := range want {
		now := t0.Add(time.Duration(i+1) * time.Hour)
		b.Readmit("a", now)
		if cut, _ := b.Charge("a", 10_000, now); cut {
			t.Fatalf("cut %d: a readmitted node did not start on a full budget", i+2)
		}
		if cut, coolOff := b.Charge("a", 1, now); !cut || coolOff != w {
			t.Fatalf("cut %d: cut %v for %s, want %s", i+2, cut, coolOff, w)
		}
	}
	if cut, _ := NewBudgets(EventBudget{Off: true}).Charge("a", 1<<40, t0); cut {
		t.Fatal("a budget that is off cut a node off")
	}
}

func TestWithoutShutsOutOnlyThatNodesUsers(t *testing.T) {
	f := &File{Users: []User{{Name: "n1", Role: Node, Node: "box1"}, {Name: "n1b", Role: Node, Node: "box1"},
		{Name: "n2", Role: Node, Node: "box2"}, {Name: "admin", Role: Admin}}}
	var names []string
	for _, u := range f.Without(map[string]bool{"box1": true}).Users {
		names = append(names, u.Name)
	}
	if strings.Join(names, ",") != "n2,admin" {
		t.Fatalf("without box1: %v", names)
	}
	if n := f.Nodes(); len(n) != 2 || !n["box1"] || !n["box2"] {
		t.Fatalf("nodes %v", n)
	}
}
