package crmath

import (
	"math"
	"testing"
)

// The expected values were printed by CPython 3.11 on glibc 2.36
// (math.log, 10 ** x, math.exp): the C library's correctly rounded results.
func TestMatchesTheCLibrary(t *testing.T) {
	logs := map[float64]float64{0.1: -2.3025850929940455, 0.5: -0.6931471805599453, 1e-10: -23.025850929940457, 2.5: 0.9162907318741551,
		123.456: 4.815884817283264, 0.999999: -1.000000500029089e-06, 3.7: 1.308332819650179, 1: 0}
	for x, want := range logs {
		if got := Log(x); got != want {
			t.Errorf("Log(%v) = %v, the C library %v", x, got, want)
		}
	}
	pows := map[float64]float64{1.5: 31.622776601683793, 2.0: 100.0, 2.3456789: 221.6556980075368, 3.999: 9977.000638225536,
		3.14159: 1385.4472660972244, 1.7320508: 53.957373347728115}
	for x, want := range pows {
		if got := Pow10(x); got != want {
			t.Errorf("Pow10(%v) = %v, the C library %v", x, got, want)
		}
	}
	exps := map[float64]float64{0.5: 1.6487212707001282, -3.2: 0.04076220397836621, 10.1: 24343.00942440838, 700: 1.0142320547350045e+304}
	for x, want := range exps {
		if got := Exp(x); got != want {
			t.Errorf("Exp(%v) = %v, the C library %v", x, got, want)
		}
	}
}

// TestCloseToGo checks many arguments against Go's math, which is within
// a few units in the last place (math.Pow(10, 0.41) is 4 off): a gross
// error in the series or the reduction would be far outside 1e-14.
func TestCloseToGo(t *testing.T) {
	for i := 1; i < 2000; i++ {
		x := float64(i) / 500 // 0.002 … 4
		if got, want := Pow10(x), math.Pow(10, x); math.Abs(got-want) > math.Abs(want)*1e-14 {
			t.Fatalf("Pow10(%v) = %v, Go %v", x, got, want)
		}
		if got, want := Log(x), math.Log(x); math.Abs(got-want) > math.Abs(want)*1e-14+1e-300 {
			t.Fatalf("Log(%v) = %v, Go %v", x, got, want)
		}
	}
}
