package pyrand

import (
	"slices"
	"testing"
)

// The expected values were printed by CPython 3.11's random module for
// the same seeds and calls.
func TestMatchesCPython(t *testing.T) {
	r := New(0)
	if got := []float64{r.Random(), r.Random(), r.Random()}; !slices.Equal(got, []float64{0.8444218515250481, 0.7579544029403025, 0.420571580830845}) {
		t.Errorf("Random(seed 0) = %v", got)
	}
	r = New(42)
	if got := []uint32{r.GetRandBits(32), r.GetRandBits(32), r.GetRandBits(32)}; !slices.Equal(got, []uint32{2746317213, 478163327, 107420369}) {
		t.Errorf("getrandbits(32) (seed 42) = %v", got)
	}
	r = New(7)
	var below []int
	for range 10 {
		below = append(below, r.RandBelow(26))
	}
	if !slices.Equal(below, []int{10, 4, 12, 20, 1, 2, 17, 3, 11, 18}) {
		t.Errorf("randrange(26) (seed 7) = %v", below)
	}
	r = New(3)
	small, large := r.Sample2(10), r.Sample2(30)
	if small != [2]int{3, 8} || large != [2]int{4, 11} {
		t.Errorf("sample(range(10), 2), sample(range(30), 2) (seed 3) = %v %v", small, large)
	}
	if got := New(1<<32 + 5).Random(); got != 0.15727238718789782 {
		t.Errorf("Random(seed 2^32+5) = %v: a seed's high word is not keyed", got)
	}
}

func TestShuffleMatchesCPython(t *testing.T) {
	r := New(5)
	l := []string{"v100", "p100", "k80"}
	r.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
	if !slices.Equal(l, []string{"v100", "p100", "k80"}) {
		t.Errorf("shuffle (seed 5) = %v", l)
	}
	r = New(11)
	l2 := []int{0, 1, 2, 3, 4, 5, 6, 7}
	r.Shuffle(len(l2), func(i, j int) { l2[i], l2[j] = l2[j], l2[i] })
	if !slices.Equal(l2, wantShuffle11) {
		t.Errorf("shuffle(range(8)) (seed 11) = %v, want %v", l2, wantShuffle11)
	}
}

// wantShuffle11 is CPython's random.Random(11).shuffle(list(range(8))).
var wantShuffle11 = []int{1, 0, 2, 5, 3, 4, 6, 7}

// TestSampleMatchesCPython checks random.sample's both ways (a pool for
// small populations, a set of draws for large ones, the boundary moving
// with k) against CPython 3.11's random.Random(7).sample(range(n), k),
// called in this order.
func TestSampleMatchesCPython(t *testing.T) {
	r := New(7)
	cases := []struct {
		n, k int
		want []int
	}{
		{30, 3, []int{10, 4, 12}},
		{10, 8, []int{0, 1, 8, 2, 4, 9, 7, 5}},
		{64, 12, []int{11, 27, 26, 4, 15, 5, 35, 62, 3, 52, 36, 7}},
		{200, 6, []int{57, 161, 160, 149, 15, 147}},
	}
	for _, c := range cases {
		if got := r.Sample(c.n, c.k); !slices.Equal(got, c.want) {
			t.Errorf("sample(range(%d), %d) = %v, CPython %v", c.n, c.k, got, c.want)
		}
	}
}
