package chaos

import (
	"reflect"
	"testing"
	"time"

	"github.com/gpusched/gpusched/events"
)

func TestParseMonkey(t *testing.T) {
	spec, err := ParseMonkey("kill=2/h, hang=1/h,partition=24/d,drop=0.3,for=20s,kill-scheduler=1/m,until=24h")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"kill": 2, "hang": 1, "partition": 1, "kill-scheduler": 60}
	if !reflect.DeepEqual(spec.Rates, want) || spec.For != 20*time.Second || spec.Drop != 0.3 || spec.Until != 24*time.Hour {
		t.Fatalf("spec %+v", spec)
	}
	// delay= and drop= are a fault's rate with a unit of rate, its setting without.
	spec, err = ParseMonkey("delay=3/h,delay=2s,drop=1/m,drop=0.5")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]float64{"delay": 3, "drop": 60}; !reflect.DeepEqual(spec.Rates, want) || spec.Delay != 2*time.Second || spec.Drop != 0.5 {
		t.Fatalf("spec %+v", spec)
	}
	for _, bad := range []string{"", "kill", "kill=x/h", "kill=2/y", "explode=1/h", "for=-1s", "drop=2", "kill=-1/h", "delay=2", "delay=x/h", "until=0s", "until=tomorrow"} {
		if _, err := ParseMonkey(bad); err == nil {
			t.Errorf("ParseMonkey(%q) accepted", bad)
		}
	}
}

// TestPlanIsSeededAndAtItsRates: the same seed gives the same plan, and
// over a long horizon each action's count is near its rate.
func TestPlanIsSeededAndAtItsRates(t *testing.T) {
	spec, _ := ParseMonkey("kill=2/h,hang=1/h,partition=1/h")
	targets := []Target{{"gpu-0", "node-0"}, {"gpu-1", "node-0"}, {"gpu-7", "node-1"}}
	a := Plan(spec, 42, targets, 1000*time.Hour)
	if b := Plan(spec, 42, targets, 1000*time.Hour); !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave another plan")
	}
	if c := Plan(spec, 43, targets, 1000*time.Hour); reflect.DeepEqual(a, c) {
		t.Fatal("another seed gave the same plan")
	}
	counts := map[string]int{}
	for i, f := range a {
		counts[f.Action]++
		if i > 0 && f.At < a[i-1].At {
			t.Fatal("plan not in time order")
		}
		if f.Request.GPU == "" || Validate(f.Action, f.Request) != nil {
			t.Fatalf("fault %+v is not a valid request: %v", f, Validate(f.Action, f.Request))
		}
	}
	// Poisson counts: mean rate×1000, standard deviation its square root.
	for action, rate := range spec.Rates {
		mean := rate * 1000
		if d := float64(counts[action]) - mean; d*d > 25*mean {
			t.Errorf("%s: %d faults in 1000h, want about %.0f", action, counts[action], mean)
		}
	}
	if counts[events.ChaosKillAction] == 0 {
		t.Fatal("no kills")
	}
}
