package vram

import (
	"errors"
	"math/rand/v2"
	"testing"
)

func TestFragmentedRefusal(t *testing.T) {
	l := New(100, Contiguous)
	for _, job := range []string{"a", "b", "c", "d"} {
		if _, err := l.Allocate(job, 25); err != nil {
			t.Fatalf("allocate %s: %v", job, err)
		}
	}
	l.Release("a")
	l.Release("c")
	if got := l.Free(); got != 50 {
		t.Fatalf("free = %d, want 50", got)
	}
	if got := l.LargestFree(); got != 25 {
		t.Fatalf("largest free = %d, want 25", got)
	}
	if _, err := l.Allocate("e", 40); !errors.Is(err, ErrFragmented) {
		t.Fatalf("40 into two 25 holes: err = %v, want fragmented", err)
	}
	if _, err := l.Allocate("f", 60); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("60 into 50 free: err = %v, want insufficient", err)
	}
	off, err := l.Allocate("g", 20)
	if err != nil || off != 0 {
		t.Fatalf("first fit: offset %d err %v, want 0", off, err)
	}
	pooled := New(100, Pooled)
	for _, job := range []string{"a", "b", "c", "d"} {
		pooled.Allocate(job, 25)
	}
	pooled.Release("a")
	pooled.Release("c")
	if _, err := pooled.Allocate("e", 40); err != nil {
		t.Fatalf("pooled model must take 40 of 50 free: %v", err)
	}
}

func TestLargestFreeWithoutVictims(t *testing.T) {
	allocs := []Alloc{{"a", 0, 30}, {"b", 30, 30}, {"c", 60, 30}}
	if got := LargestFree(100, Contiguous, allocs, nil); got != 10 {
		t.Fatalf("largest = %d, want 10", got)
	}
	skipB := func(a Alloc) bool { return a.Owner == "b" }
	if got := LargestFree(100, Contiguous, allocs, skipB); got != 30 {
		t.Fatalf("without b = %d, want 30", got)
	}
	skipC := func(a Alloc) bool { return a.Owner == "c" }
	if got := LargestFree(100, Contiguous, allocs, skipC); got != 40 {
		t.Fatalf("without c = %d, want 40", got)
	}
}

// TestRandomAllocationsKeepInvariants allocates and frees at random (seeded)
// and checks that allocations never overlap or exceed capacity.
func TestRandomAllocationsKeepInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	l := New(1000, Contiguous)
	live := []string{}
	for i := 0; i < 5000; i++ {
		if len(live) > 0 && rng.IntN(2) == 0 {
			k := rng.IntN(len(live))
			if !l.Release(live[k]) {
				t.Fatalf("release of live %s failed", live[k])
			}
			live = append(live[:k], live[k+1:]...)
		} else {
			owner := string(rune('A'+i%26)) + string(rune('0'+i%10)) + string(rune(i))
			want := l.LargestFree()
			size := int64(1 + rng.IntN(300))
			_, err := l.Allocate(owner, size)
			if (err == nil) != (size <= want) {
				t.Fatalf("allocate %d with largest free %d: err %v", size, want, err)
			}
			if err == nil {
				live = append(live, owner)
			}
		}
		if err := Check(l.Capacity, l.Model, l.Allocs()); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}
