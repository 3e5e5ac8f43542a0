package core

import (
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
)

// The GPUs a node may have are bounded (Config.NodeGPUs, NodeMaxGPUs):
// every GPU the view knows is kept for good (a dead one too: its jobs'
// history and its incarnations point at it), so without a bound a node
// whose heartbeats named ever new ids — 1,024 a beat — grew the view by
// tens of thousands of GPUs that every snapshot, metric and pass then
// walked. A node's count is the GPUs of it the view knows plus those its
// heartbeats name that have not been read yet (unread); an id past the
// bound is refused wherever it comes from, and said once a node goes past
// it (a log line and an evt.security.gpus-refused event).

// gpuBound is the number of GPUs node may have; 0 is no bound.
func (s *Core) gpuBound(node string) int {
	if n, ok := s.cfg.NodeGPUs[node]; ok {
		return n
	}
	return s.cfg.NodeMaxGPUs
}

// withinBound are the GPUs of node's heartbeat the scheduler takes: those
// it knows, those the node's earlier heartbeats named, and new ones while
// the node has room; the rest are refused. A GPU an earlier heartbeat
// named, that the view has not read and this one no longer names, is
// forgotten: it frees its room.
func (s *Core) withinBound(node string, gpus []events.HeartbeatGPU) []events.HeartbeatGPU {
	unread := s.unread[node]
	if len(unread) > 0 {
		// (Most heartbeats name no GPU unread: no map for them.)
		named := make(map[string]bool, len(gpus))
		for _, g := range gpus {
			named[g.GPU] = true
		}
		for id := range unread {
			if _, known := s.view.gpus[id]; known || !named[id] {
				delete(unread, id)
				if !known {
					delete(s.heardGPUs, id)
				}
			}
		}
	}
	bound, known := s.gpuBound(node), s.knownOn(node)
	refused := 0
	kept := gpus[:0]
	for _, g := range gpus {
		if _, ok := s.view.gpus[g.GPU]; ok || unread[g.GPU] {
			kept = append(kept, g)
			continue
		}
		if bound > 0 && known+len(unread) >= bound {
			refused++
			continue
		}
		if unread == nil {
			unread = map[string]bool{}
			s.unread[node] = unread
		}
		unread[g.GPU] = true
		kept = append(kept, g)
	}
	if refused > 0 {
		s.refuseGPUs(node, refused)
	} else if s.overBound[node] && known+len(unread) < bound {
		delete(s.overBound, node)
	}
	return kept
}

// mayJoin says whether gpu may join the view as node's: when the node has
// room for it (a GPU its heartbeat named is counted already).
func (s *Core) mayJoin(node, gpu string) bool {
	bound := s.gpuBound(node)
	if bound == 0 || s.unread[node][gpu] {
		return true
	}
	if s.knownOn(node)+len(s.unread[node]) < bound {
		return true
	}
	s.refuseGPUs(node, 1)
	return false
}

// knownOn is how many GPUs of node the view knows.
func (s *Core) knownOn(node string) int {
	if n, ok := s.view.nodes[node]; ok {
		return len(n.GPUs)
	}
	return 0
}

// refuseGPUs says, once a node goes past its bound, that its GPUs past it
// are refused.
func (s *Core) refuseGPUs(node string, refused int) {
	if s.overBound[node] {
		return
	}
	s.overBound[node] = true
	bound := s.gpuBound(node)
	s.log.Warn("a node names more GPUs than it may have: the ones past its bound are refused", zap.String("node", node),
		zap.Int("bound", bound), zap.Int("refused", refused))
	s.out.emit(s.cfg.Subjects.SecurityEvent(events.GPUsRefused), events.Type("security", events.GPUsRefused), node, s.now,
		events.RefusedGPUs{Node: node, Bound: bound, Refused: refused})
}
