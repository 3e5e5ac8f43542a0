package jobgen

import (
	"reflect"
	"strings"
	"testing"
)

func TestMixIsSeededAndRealistic(t *testing.T) {
	a, b := NewMix(42), NewMix(42)
	var evals, demo int
	for i := 0; i < 500; i++ {
		x, y := a.Next(), b.Next()
		if !reflect.DeepEqual(x, y) {
			t.Fatalf("job %d differs for the same seed: %+v vs %+v", i, x, y)
		}
		if a.Interarrival(4) != b.Interarrival(4) {
			t.Fatalf("arrival %d differs for the same seed", i)
		}
		if strings.HasPrefix(x.Name, "eval-") {
			evals++
		} else {
			demo++
		}
	}
	if evals < 150 || demo < 150 {
		t.Fatalf("mix of %d evals and %d demo jobs, want both common", evals, demo)
	}
	if reflect.DeepEqual(NewMix(1).Next(), NewMix(2).Next()) && reflect.DeepEqual(NewMix(1).Interarrival(4), NewMix(2).Interarrival(4)) {
		t.Fatal("different seeds give the same stream")
	}
}

func TestInterarrivalMatchesRate(t *testing.T) {
	m := NewMix(3)
	var sum float64
	const n = 20000
	for i := 0; i < n; i++ {
		sum += m.Interarrival(4).Hours()
	}
	if mean := sum / n; mean < 0.24 || mean > 0.26 {
		t.Fatalf("mean gap %.3fh at 4 jobs/hour, want 0.25h", mean)
	}
}
