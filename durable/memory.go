package durable

import (
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/gpusched/gpusched/events"
)

// MemoryJournal is a job journal kept in the process's memory: what the
// schedulers of a virtual run write when the run kills its scheduler
// (chaos kill-scheduler), so that the one restarted after a kill takes the
// queue back as a live cluster on a durable journal does, instead of
// losing it. A virtual run is a computation, not a service: nothing of it
// needs to outlive the process. Safe for one writer at a time (the
// scheduler alive) and a reader between two (its supervisor).
type MemoryJournal struct {
	mu      sync.Mutex
	records map[string]Record
}

// NewMemoryJournal returns an empty journal.
func NewMemoryJournal() *MemoryJournal {
	return &MemoryJournal{records: map[string]Record{}}
}

// Put keeps a copy of r (its slices and map copied: the scheduler goes on
// changing the job they came from).
func (m *MemoryJournal) Put(r *Record) {
	c := deepCopy(*r)
	m.mu.Lock()
	m.records[r.JobID] = c
	m.mu.Unlock()
}

// deepCopy is r with its own slices and map, as a record read back from a
// store is: whoever takes it may append to them or change them.
func deepCopy(r Record) Record {
	r.GPUs = slices.Clip(slices.Clone(r.GPUs))
	r.History = slices.Clip(slices.Clone(r.History))
	r.Awaiting = maps.Clone(r.Awaiting)
	return r
}

// State is what the journal holds, as Journal.Load reads a durable one:
// the records in acceptance order, with the incarnation, simulated time
// and totals the caller knows (the dead scheduler's).
func (m *MemoryJournal) State(incarnation int, now time.Time, totals events.Totals) State {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := State{Incarnation: incarnation, SimTime: now, Totals: totals, Jobs: make([]Record, 0, len(m.records))}
	for _, r := range m.records {
		st.Jobs = append(st.Jobs, deepCopy(r))
	}
	sort.Slice(st.Jobs, func(a, b int) bool { return st.Jobs[a].Seq < st.Jobs[b].Seq })
	return st
}
