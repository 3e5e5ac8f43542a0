package pal

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Placements are the placement policies' command-line names, and the
// artifact's code name of each (§5.0: the artifact's plots label
// Default-Packed-NS "Packed-Sticky", the reverse of its behaviour).
var Placements = []struct{ Name, Artifact, Doc string }{
	{"pm-first", "PMFirst", "fastest performance level first, best-match locality within it; re-places every job every round"},
	{"pal", "PAL", "PM-First, but a 2–4-GPU job may take a slower level inside one node rather than pay the locality penalty; re-places every round"},
	{"packed-sticky", "Default-Packed-S", "packs jobs onto the fewest nodes, variability-blind; running jobs keep their GPUs (the paper's plots call it Packed-Non-Sticky)"},
	{"packed-nonsticky", "Default-Packed-NS", "packs jobs onto the fewest nodes, variability-blind; re-places every round (the paper's plots call it Packed-Sticky and normalise to it)"},
	{"random-sticky", "Default-Random-S", "random free GPUs; running jobs keep theirs"},
	{"random-nonsticky", "Default-Random-NS", "random free GPUs; re-places every round"},
}

// Queues are the job orders' command-line names and the artifact's (§4).
// Their LAS is plain attained service (seconds run, whatever the GPU
// count), not the two-dimensional Tiresias LAS that --queue las means in
// the live scheduler.
var Queues = []struct{ Name, Artifact, Doc string }{
	{"fifo", "Fifo", "by submit time"},
	{"las", "Las", "least attained service first (seconds run, not GPU-seconds), ties by id"},
	{"srtf", "Srtf", "shortest nominal remaining time first (ignores variability)"},
}

// PlacementName is the command-line name of a placement given by either
// name (case-insensitive); ok is false when there is none.
func PlacementName(s string) (string, bool) {
	for _, p := range Placements {
		if strings.EqualFold(s, p.Name) || strings.EqualFold(s, p.Artifact) {
			return p.Name, true
		}
	}
	return "", false
}

// QueueName is the command-line name of a queue order given by either
// name (case-insensitive); ok is false when there is none.
func QueueName(s string) (string, bool) {
	for _, q := range Queues {
		if strings.EqualFold(s, q.Name) || strings.EqualFold(s, q.Artifact) {
			return q.Name, true
		}
	}
	return "", false
}

// ArtifactPlacement is the artifact's code name of a placement.
func ArtifactPlacement(name string) string {
	for _, p := range Placements {
		if p.Name == name {
			return p.Artifact
		}
	}
	return name
}

// ArtifactQueue is the artifact's code name of a queue order.
func ArtifactQueue(name string) string {
	for _, q := range Queues {
		if q.Name == name {
			return q.Artifact
		}
	}
	return name
}

func names[T any](list []T, name func(T) string) string {
	var out []string
	for _, x := range list {
		out = append(out, name(x))
	}
	return strings.Join(out, ", ")
}

func unknownPlacement(s string) error {
	return fmt.Errorf("policy: %q is not a PAL placement (%s)", s, names(Placements, func(p struct{ Name, Artifact, Doc string }) string { return p.Name }))
}

func unknownQueue(s string) error {
	return fmt.Errorf("queue: %q is not a PAL queue order (%s)", s, names(Queues, func(q struct{ Name, Artifact, Doc string }) string { return q.Name }))
}

// order is the scheduler's order of the active jobs (§4): a stable sort
// of them in id order by the queue's key.
func order(queue string, active []*job) []*job {
	out := slices.Clone(active)
	slices.SortFunc(out, func(a, b *job) int { return cmp.Compare(a.id, b.id) })
	var key func(*job) float64
	switch queue {
	case "fifo":
		key = func(j *job) float64 { return j.submit }
	case "las":
		key = func(j *job) float64 { return j.attained }
	case "srtf":
		key = func(j *job) float64 { return j.iterTime*j.totalIters - j.attained }
	}
	slices.SortStableFunc(out, func(a, b *job) int { return cmp.Compare(key(a), key(b)) })
	return out
}
