package vram

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Model selects how VRAM is allocated.
type Model string

// The two VRAM models.
const (
	Contiguous Model = "contiguous"
	Pooled     Model = "pooled"
)

// ParseModel checks a --vram-model value.
func ParseModel(s string) (Model, error) {
	switch Model(s) {
	case Contiguous, Pooled:
		return Model(s), nil
	case "":
		return Contiguous, nil
	}
	return "", fmt.Errorf("unknown VRAM model %q (use contiguous or pooled)", s)
}

// Refusal reasons, as GPU actors report them.
var (
	// ErrInsufficient means the GPU's total free VRAM is smaller than asked.
	ErrInsufficient = errors.New("insufficient VRAM")
	// ErrFragmented means enough VRAM is free in total but no single hole is large enough.
	ErrFragmented = errors.New("fragmented VRAM")
	// ErrDuplicate means the owner already holds an allocation.
	ErrDuplicate = errors.New("already allocated")
)

// Alloc is one allocation: its owner (a job id), its first byte and its size.
// In the pooled model Offset is -1.
type Alloc struct {
	Owner  string `json:"job_id"`
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
}

// Layout is a GPU's VRAM: its capacity and its allocations ordered by offset.
type Layout struct {
	Capacity int64
	Model    Model
	allocs   []Alloc
}

// New returns an empty layout.
func New(capacity int64, model Model) *Layout {
	if model == "" {
		model = Contiguous
	}
	return &Layout{Capacity: capacity, Model: model}
}

// Allocs returns a copy of the allocations, ordered by offset.
func (l *Layout) Allocs() []Alloc { return append([]Alloc(nil), l.allocs...) }

// Used is the allocated VRAM.
func (l *Layout) Used() int64 {
	var u int64
	for _, a := range l.allocs {
		u += a.Size
	}
	return u
}

// Free is the unallocated VRAM.
func (l *Layout) Free() int64 { return l.Capacity - l.Used() }

// LargestFree is the largest allocation the layout can take now.
func (l *Layout) LargestFree() int64 { return LargestFree(l.Capacity, l.Model, l.allocs, nil) }

// Allocate places size bytes for owner at the lowest address with a hole
// large enough (first fit), or refuses with ErrInsufficient or ErrFragmented.
func (l *Layout) Allocate(owner string, size int64) (int64, error) {
	for _, a := range l.allocs {
		if a.Owner == owner {
			return 0, ErrDuplicate
		}
	}
	if size > l.Free() {
		return 0, ErrInsufficient
	}
	at, ok := FirstFit(l.Capacity, l.Model, l.allocs, size)
	if !ok {
		return 0, ErrFragmented
	}
	i := len(l.allocs)
	if l.Model != Pooled {
		i = slices.IndexFunc(l.allocs, func(a Alloc) bool { return a.Offset > at })
		if i < 0 {
			i = len(l.allocs)
		}
	}
	l.allocs = slices.Insert(l.allocs, i, Alloc{Owner: owner, Offset: at, Size: size})
	return at, nil
}

// FirstFit is where an allocation of size goes in a layout of capacity
// whose allocations (sorted by offset) are allocs: the lowest offset of a
// hole large enough (-1 in the pooled model, where offsets do not
// matter), and whether there is one. A GPU's layout allocates with it and
// a round's scratch copy of the cluster (policy) places with it.
func FirstFit(capacity int64, model Model, allocs []Alloc, size int64) (int64, bool) {
	var used int64
	for _, a := range allocs {
		used += a.Size
	}
	if capacity-used < size {
		return 0, false
	}
	if model == Pooled {
		return -1, true
	}
	var at int64
	for _, a := range allocs {
		if a.Offset-at >= size {
			return at, true
		}
		at = a.Offset + a.Size
	}
	return at, capacity-at >= size
}

// Release frees owner's allocation and reports whether it had one.
func (l *Layout) Release(owner string) bool {
	for i, a := range l.allocs {
		if a.Owner == owner {
			l.allocs = append(l.allocs[:i], l.allocs[i+1:]...)
			return true
		}
	}
	return false
}

// Check verifies the layout's invariants: inside capacity, no overlap, in order.
func Check(capacity int64, model Model, allocs []Alloc) error {
	var used int64
	var end int64
	for i, a := range allocs {
		if a.Size <= 0 {
			return fmt.Errorf("allocation %s has size %d", a.Owner, a.Size)
		}
		used += a.Size
		if model == Pooled {
			continue
		}
		if a.Offset < 0 || a.Offset+a.Size > capacity {
			return fmt.Errorf("allocation %s [%d,%d) outside capacity %d", a.Owner, a.Offset, a.Offset+a.Size, capacity)
		}
		if i > 0 && a.Offset < end {
			return fmt.Errorf("allocation %s at %d overlaps the previous one ending at %d", a.Owner, a.Offset, end)
		}
		end = a.Offset + a.Size
	}
	if used > capacity {
		return fmt.Errorf("allocated %d bytes exceed capacity %d", used, capacity)
	}
	return nil
}

// LargestFree is the largest single allocation that fits in a layout of the
// given capacity and allocations, ignoring those for which skip returns true
// (the scheduler uses skip to ask "what if these victims left?"). In the
// pooled model it is simply the free total.
func LargestFree(capacity int64, model Model, allocs []Alloc, skip func(Alloc) bool) int64 {
	if model == Pooled {
		free := capacity
		for _, a := range allocs {
			if skip == nil || !skip(a) {
				free -= a.Size
			}
		}
		return free
	}
	sorted := allocs
	if !sort.SliceIsSorted(allocs, func(i, j int) bool { return allocs[i].Offset < allocs[j].Offset }) {
		sorted = append([]Alloc(nil), allocs...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].Offset < sorted[j].Offset })
	}
	var largest, at int64
	for _, a := range sorted {
		if skip != nil && skip(a) {
			continue
		}
		largest = max(largest, a.Offset-at)
		at = a.Offset + a.Size
	}
	return max(largest, capacity-at)
}
