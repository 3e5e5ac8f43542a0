package bench

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
)

// MessageKind is one kind of message a placement sends on the bus, as the
// ceiling (ceiling.go) models it.
type MessageKind string

// The kinds of a placement's messages.
const (
	KindSubmit      MessageKind = "submit"      // the client's request
	KindEvent       MessageKind = "job event"   // submitted, queued, decision, placed, started
	KindReservation MessageKind = "reservation" // the batch to the node that asks for answers
	KindAnswer      MessageKind = "answer"      // the node's and the GPU's answers to a reservation
	KindCommit      MessageKind = "commit"      // the batch that commits (no answer)
	KindStatus      MessageKind = "status"      // the GPU's status event after a commit
	KindReply       MessageKind = "reply"       // the answer to the client
)

// MessageKinds are the kinds in the order a placement sends them.
var MessageKinds = []MessageKind{KindSubmit, KindEvent, KindReservation, KindAnswer, KindCommit, KindStatus, KindReply}

// MessageTally is how many messages of one kind, and their bytes (bodies).
type MessageTally struct {
	Count, Bytes int
}

// Mean is the kind's mean body in bytes (0 when none was seen).
func (t MessageTally) Mean() float64 { return float64(t.Bytes) / float64(max(1, t.Count)) }

// PlacementMessages are the messages of Placements placements by kind.
type PlacementMessages struct {
	Placements int
	Kinds      map[MessageKind]MessageTally
}

// PerPlacement is the messages and bytes sent per placement, every kind
// together.
func (p PlacementMessages) PerPlacement() (msgs, bytes float64) {
	for _, t := range p.Kinds {
		msgs += float64(t.Count)
		bytes += float64(t.Bytes)
	}
	n := float64(max(1, p.Placements))
	return msgs / n, bytes / n
}

// CeilingMessages is what the ceiling sends for n placements: its message
// pattern (ceiling.go) with its bodies' sizes.
func CeilingMessages(n int) PlacementMessages {
	k := map[MessageKind]MessageTally{
		KindSubmit:      {n, n * len(submitBody)},
		KindEvent:       {5 * n, 5 * n * ceilingEvent},
		KindReservation: {n, n * ceilingReservation},
		KindAnswer:      {2 * n, 2 * n * ceilingAnswer},
		KindCommit:      {n, n * ceilingCommit},
		KindStatus:      {n, n * ceilingStatus},
		KindReply:       {n, n * len(replyBody)},
	}
	return PlacementMessages{Placements: n, Kinds: k}
}

// Drift compares got's bytes per placement with want's, kind by kind and
// in all, and names every one more than tolerance (a fraction of want's)
// away. Bytes per placement, not per message: the cluster may send two
// placements' commits to one node in one batch, the ceiling never does,
// and what the bus carries is the same.
func Drift(got, want PlacementMessages, tolerance float64) []string {
	var off []string
	per := func(p PlacementMessages, k MessageKind) float64 {
		return float64(p.Kinds[k].Bytes) / float64(max(1, p.Placements))
	}
	for _, k := range MessageKinds {
		g, w := per(got, k), per(want, k)
		if d := g/max(1, w) - 1; d > tolerance || d < -tolerance {
			off = append(off, fmt.Sprintf("%s: %.0f bytes per placement on the bus, %.0f in the ceiling (%+.0f %%)", k, g, w, 100*d))
		}
	}
	_, gb := got.PerPlacement()
	_, wb := want.PerPlacement()
	if d := gb/max(1, wb) - 1; d > tolerance || d < -tolerance {
		off = append(off, fmt.Sprintf("every kind: %.0f bytes per placement on the bus, %.0f in the ceiling (%+.0f %%)", gb, wb, 100*d))
	}
	return off
}

// CountPlacementMessages places n of the bench's jobs on c (window in
// flight, none cancelled: the cluster must hold them) through nc and
// counts, on a connection of its own, every message those placements
// sent, by kind: what the ceiling models. Heartbeats, leases and metrics
// go on beside and are not counted.
func CountPlacementMessages(nc, watch *nats.Conn, n, window int) (PlacementMessages, error) {
	sj := events.NewSubjects("")
	var mu sync.Mutex
	kinds := map[MessageKind]MessageTally{}
	awaited := map[string]MessageKind{} // reply subjects the counted requests named
	add := func(k MessageKind, m *nats.Msg) {
		t := kinds[k]
		t.Count++
		t.Bytes += len(m.Data)
		kinds[k] = t
	}
	sub, err := watch.Subscribe(">", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		s := m.Subject
		_, jobEvent := sj.ParseJobEvent(s)
		_, nodeWhat, toNode := events.ParseNodeSubject(s)
		_, _, gpuEvent, fromGPU := events.ParseGPUEvent(s)
		switch {
		case s == sj.JobSubmit():
			add(KindSubmit, m)
			awaited[m.Reply] = KindReply
		case jobEvent || s == sj.SchedEvent(events.SchedDecision):
			add(KindEvent, m)
		case toNode && nodeWhat == "batch":
			if m.Reply == "" {
				add(KindCommit, m)
				return
			}
			add(KindReservation, m)
			awaited[m.Reply] = KindAnswer
		case fromGPU && gpuEvent == events.GPUStatusType:
			add(KindStatus, m)
		default:
			// A reply subject is seen after the request that named it:
			// the same connection delivers both, in the server's order.
			if k, ok := awaited[s]; ok {
				add(k, m)
			}
		}
	})
	if err != nil {
		return PlacementMessages{}, err
	}
	defer sub.Unsubscribe()
	sub.SetPendingLimits(-1, -1)
	if err := watch.Flush(); err != nil {
		return PlacementMessages{}, err
	}
	replies, _, err := Pipelined(nc, sj.JobSubmit(), func(int) []byte { return []byte(submitBody) }, n, window)
	if err != nil {
		return PlacementMessages{}, err
	}
	if len(replies) != n {
		return PlacementMessages{}, fmt.Errorf("%d of %d submissions answered", len(replies), n)
	}
	// Every commit ends in a GPU's status: the count is done when each
	// placement's status has come (a commit may carry several).
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		statuses := kinds[KindStatus].Count
		mu.Unlock()
		if statuses >= n {
			break
		}
		if time.Now().After(deadline) {
			return PlacementMessages{}, fmt.Errorf("%d GPU statuses for %d placements after 10 s", statuses, n)
		}
		if err := watch.Flush(); err != nil {
			return PlacementMessages{}, err
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return PlacementMessages{Placements: n, Kinds: maps.Clone(kinds)}, nil
}

// String is the tallies in MessageKinds' order, per placement.
func (p PlacementMessages) String() string {
	var parts []string
	for _, k := range MessageKinds {
		t := p.Kinds[k]
		parts = append(parts, fmt.Sprintf("%s %.2f × %.0f B", k, float64(t.Count)/float64(max(1, p.Placements)), t.Mean()))
	}
	msgs, bytes := p.PerPlacement()
	return fmt.Sprintf("%.1f messages, %.0f bytes per placement: %s", msgs, bytes, strings.Join(parts, "; "))
}

// countReferencePlacements counts one bench round's placements' messages
// (CountPlacementMessages: 80 of the bench's jobs, 32 in flight) on a
// reference cluster with no journal, its client over TCP or in-process.
func countReferencePlacements(ctx context.Context, o Options, tcp bool) (PlacementMessages, error) {
	var got PlacementMessages
	err := withCluster(ctx, o, ClusterOptions{GPUs: "6xA100-40GB,2xA100-80GB", Policy: "binpack", Store: durable.None}, tcp, func(nc *nats.Conn, c *cluster.Cluster) error {
		watch, err := Client(c, false)
		if err != nil {
			return err
		}
		defer watch.Close()
		got, err = CountPlacementMessages(nc, watch, referenceRound, referenceWindow)
		return err
	})
	return got, err
}
