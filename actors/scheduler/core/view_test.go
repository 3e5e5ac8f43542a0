package core

import (
	"slices"
	"testing"
)

func TestNaturalOrderOfIDs(t *testing.T) {
	ids := []string{"gpu-10", "gpu-2", "node-1-g3", "gpu-1", "node-1-g10", "gpu-0"}
	sortByID(ids, func(id string) string { return id })
	want := []string{"gpu-0", "gpu-1", "gpu-2", "gpu-10", "node-1-g3", "node-1-g10"}
	if !slices.Equal(ids, want) {
		t.Fatalf("sorted %v, want %v", ids, want)
	}
}
