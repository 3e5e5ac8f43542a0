package core

import (
	"slices"
	"time"

	"github.com/gpusched/gpusched/events"
)

// nodeRegistry is what the nodes' heartbeats told the scheduler: when
// each node last beat, whether it takes its controls batched, which GPUs
// its heartbeats named (alive or not, read or not), and how many GPUs
// each node may have. It knows nothing of the view: what it needs of it
// (is a GPU read, how many of a node's it holds) it is given.
//
// The GPUs a node may have are bounded (Config.NodeGPUs, NodeMaxGPUs):
// every GPU the view knows is kept for good (a dead one too: its jobs'
// history and its incarnations point at it), so without a bound a node
// whose heartbeats named ever new ids — 1,024 a beat — grew the view by
// tens of thousands of GPUs that every snapshot, metric and pass then
// walked. A node's count is the GPUs of it the view knows plus those its
// heartbeats name that have not been read yet (unread); an id past the
// bound is refused wherever it comes from, and said once a node goes past
// it (a log line and an evt.security.gpus-refused event).
type nodeRegistry struct {
	// bounds are Config.NodeGPUs, maxGPUs Config.NodeMaxGPUs.
	bounds  map[string]int
	maxGPUs int
	// beats is when each node's last heartbeat came (wall time); batched
	// whether it said it takes its controls batched.
	beats   map[string]time.Time
	batched map[string]bool
	// heard are the GPUs some heartbeat named, each with the node that
	// named it and the incarnation it gave.
	heard map[string]heardGPU
	// unread are, per node, the GPUs its heartbeats name that the view
	// does not know yet; overBound the nodes whose last refusal was said.
	unread    map[string]map[string]bool
	overBound map[string]bool
}

// heardGPU is a GPU as a heartbeat named it: the node and the incarnation
// it gave (the GPU may not have been read yet: hung).
type heardGPU struct {
	node        string
	incarnation int
}

func newNodeRegistry(bounds map[string]int, maxGPUs int) *nodeRegistry {
	return &nodeRegistry{bounds: bounds, maxGPUs: maxGPUs, beats: map[string]time.Time{}, batched: map[string]bool{},
		heard: map[string]heardGPU{}, unread: map[string]map[string]bool{}, overBound: map[string]bool{}}
}

// beat records node's heartbeat at wall time and whether it takes its
// controls batched.
func (r *nodeRegistry) beat(node string, wall time.Time, batched bool) {
	r.beats[node], r.batched[node] = wall, batched
}

// heardFrom says whether node has ever beaten.
func (r *nodeRegistry) heardFrom(node string) bool {
	_, ok := r.beats[node]
	return ok
}

// count is how many nodes have beaten.
func (r *nodeRegistry) count() int { return len(r.beats) }

// takesBatches says whether node's last heartbeat said it takes its
// controls batched.
func (r *nodeRegistry) takesBatches(node string) bool { return r.batched[node] }

// named records that node's heartbeat named gpu at incarnation.
func (r *nodeRegistry) named(node, gpu string, incarnation int) {
	r.heard[gpu] = heardGPU{node: node, incarnation: incarnation}
}

// heardOf is gpu as a heartbeat last named it.
func (r *nodeRegistry) heardOf(gpu string) (heardGPU, bool) {
	h, ok := r.heard[gpu]
	return h, ok
}

// unreadNodes are the GPUs some heartbeat named that read does not know,
// each with the node that named it.
func (r *nodeRegistry) unreadNodes(read func(gpu string) bool, into map[string]string) {
	for id, h := range r.heard {
		if !read(id) {
			into[id] = h.node
		}
	}
}

// lapsed are the nodes, in name order, alive by alive, whose last
// heartbeat is at least lease before wall.
func (r *nodeRegistry) lapsed(wall time.Time, lease time.Duration, alive func(node string) bool) []string {
	var out []string
	for id, at := range r.beats {
		if alive(id) && wall.Sub(at) >= lease {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// lastBeat is when node last beat.
func (r *nodeRegistry) lastBeat(node string) time.Time { return r.beats[node] }

// nextLapse is when the first node alive by alive lapses, zero if none.
func (r *nodeRegistry) nextLapse(lease time.Duration, alive func(node string) bool) time.Time {
	var next time.Time
	for id, at := range r.beats {
		if t := at.Add(lease); alive(id) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// bound is the number of GPUs node may have; 0 is no bound.
func (r *nodeRegistry) bound(node string) int {
	if n, ok := r.bounds[node]; ok {
		return n
	}
	return r.maxGPUs
}

// withinBound are the GPUs of node's heartbeat the scheduler takes: those
// read knows, those the node's earlier heartbeats named, and new ones
// while the node has room (the view holds knownOn of its GPUs); the rest
// are refused, and refused is their number when the node has just gone
// past its bound (to be said), else 0. A GPU an earlier heartbeat named,
// that the view has not read and this one no longer names, is forgotten:
// it frees its room.
func (r *nodeRegistry) withinBound(node string, gpus []events.HeartbeatGPU, read func(gpu string) bool, knownOn int) (kept []events.HeartbeatGPU, refused int) {
	unread := r.unread[node]
	if len(unread) > 0 {
		// (Most heartbeats name no GPU unread: no map for them.)
		named := make(map[string]bool, len(gpus))
		for _, g := range gpus {
			named[g.GPU] = true
		}
		for id := range unread {
			if known := read(id); known || !named[id] {
				delete(unread, id)
				if !known {
					delete(r.heard, id)
				}
			}
		}
	}
	bound := r.bound(node)
	kept = gpus[:0]
	for _, g := range gpus {
		if read(g.GPU) || unread[g.GPU] {
			kept = append(kept, g)
			continue
		}
		if bound > 0 && knownOn+len(unread) >= bound {
			refused++
			continue
		}
		if unread == nil {
			unread = map[string]bool{}
			r.unread[node] = unread
		}
		unread[g.GPU] = true
		kept = append(kept, g)
	}
	if refused > 0 {
		return kept, r.over(node, refused)
	}
	if r.overBound[node] && knownOn+len(unread) < bound {
		delete(r.overBound, node)
	}
	return kept, 0
}

// mayJoin says whether gpu may join the view as node's (which holds
// knownOn of node's GPUs): when the node has room for it (a GPU its
// heartbeat named is counted already). refused is 1 when it may not and
// the node has just gone past its bound (to be said).
func (r *nodeRegistry) mayJoin(node, gpu string, knownOn int) (ok bool, refused int) {
	bound := r.bound(node)
	if bound == 0 || r.unread[node][gpu] || knownOn+len(r.unread[node]) < bound {
		return true, 0
	}
	return false, r.over(node, 1)
}

// over marks node past its bound: refused if that is news, else 0.
func (r *nodeRegistry) over(node string, refused int) int {
	if r.overBound[node] {
		return 0
	}
	r.overBound[node] = true
	return refused
}
