package durable

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/events"
)

// TestAMemoryJournalKeepsCopiesInAcceptanceOrder: the memory journal keeps
// the last record of each job as it was written — the scheduler changing
// the job's slices and map afterwards changes nothing kept — and gives
// them back in acceptance order, with what its caller knows.
func TestAMemoryJournalKeepsCopiesInAcceptanceOrder(t *testing.T) {
	m := NewMemoryJournal()
	awaiting := map[string]int{"gpu-1": 2}
	history := make([]events.Transition, 1, 8) // room to grow in place
	history[0] = events.Transition{State: "queued"}
	second := &Record{JobID: "b", Seq: 2, State: "queued", Awaiting: awaiting, History: history}
	m.Put(second)
	m.Put(&Record{JobID: "a", Seq: 1, State: "running", GPUs: []string{"gpu-0"}})
	m.Put(&Record{JobID: "a", Seq: 1, State: "completed"}) // the last write wins
	awaiting["gpu-9"] = 1
	history = append(history, events.Transition{State: "running"})
	history[0].State = "changed"
	now := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	st := m.State(4, now, events.Totals{Completed: 1})
	if len(st.Jobs) != 2 || st.Jobs[0].JobID != "a" || st.Jobs[1].JobID != "b" {
		t.Fatalf("jobs %+v, want a then b", st.Jobs)
	}
	if st.Jobs[0].State != "completed" {
		t.Fatalf("a is %s, want its last record's completed", st.Jobs[0].State)
	}
	b := st.Jobs[1]
	if len(b.Awaiting) != 1 || len(b.History) != 1 || b.History[0].State != "queued" {
		t.Fatalf("b as kept %+v: changed by what the scheduler did after writing it", b)
	}
	if st.Incarnation != 4 || !st.SimTime.Equal(now) || st.Totals.Completed != 1 {
		t.Fatalf("state %+v, want incarnation 4 at %s with the totals given", st, now)
	}
	// A reader that appends to what it got does not change the journal.
	b.History = append(b.History, events.Transition{State: "x"})
	b.Awaiting["gpu-5"] = 1
	if again := m.State(4, now, events.Totals{}).Jobs[1]; len(again.History) != 1 || len(again.Awaiting) != 1 {
		t.Fatalf("b read again %+v: changed by an earlier reader", again)
	}
}
