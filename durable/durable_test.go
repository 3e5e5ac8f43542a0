package durable_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/testbus"
)

// TestJournalKeepsTheLastRecordOfEachJob writes several records of a few
// jobs without waiting, and reads back the last of each in seq order, the
// incarnation and the latest simulated time.
func TestJournalKeepsTheLastRecordOfEachJob(t *testing.T) {
	_, nc := testbus.StartJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	j, err := durable.Setup(ctx, nc, "", durable.Options{Storage: durable.File})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, st := range []struct {
		id    string
		seq   uint64
		state string
	}{{"b", 2, "queued"}, {"a", 1, "queued"}, {"a", 1, "running"}, {"c", 3, "queued"}, {"a", 1, "completed"}} {
		if _, err := j.Put(&durable.Record{JobID: st.id, Seq: st.seq, State: st.state, Spec: events.Job{Name: st.id},
			At: at.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.PutClock(at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := j.SetIncarnation(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := j.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range st.Jobs {
		got = append(got, r.JobID+":"+r.State)
	}
	if want := "[a:completed b:queued c:queued]"; fmtSlice(got) != want {
		t.Fatalf("journal holds %v, want %s", got, want)
	}
	if st.Incarnation != 4 || !st.SimTime.Equal(at.Add(time.Hour)) {
		t.Fatalf("incarnation %d, simtime %s; want 4 and %s", st.Incarnation, st.SimTime, at.Add(time.Hour))
	}
	if st.Jobs[0].Spec.Name != "a" {
		t.Fatalf("the spec did not round-trip: %+v", st.Jobs[0].Spec)
	}

	// Reset deletes the journal and the event stream.
	if err := durable.Reset(ctx, nc, ""); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if _, err := js.Stream(ctx, durable.EventStream("")); err == nil {
		t.Fatal("the event stream survived Reset")
	}
	j2, err := durable.Setup(ctx, nc, "", durable.Options{Storage: durable.Memory})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := j2.Load(ctx); err != nil || len(st.Jobs) != 0 || st.Incarnation != 0 {
		t.Fatalf("after Reset the journal holds %+v (%v)", st, err)
	}
}

// TestEventStreamIsBounded: the event stream's bounds are the options'.
func TestEventStreamIsBounded(t *testing.T) {
	_, nc := testbus.StartJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := durable.Setup(ctx, nc, "lab", durable.Options{Storage: durable.Memory, EventsMaxAge: time.Hour, EventsMaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	s, err := js.Stream(ctx, "LAB_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	if cfg.MaxAge != time.Hour || cfg.MaxBytes != 1<<20 || cfg.Subjects[0] != "lab.evt.job.>" || cfg.Storage != jetstream.MemoryStorage {
		t.Fatalf("event stream config %+v", cfg)
	}
	if _, err := durable.Setup(ctx, nc, "", durable.Options{}); err == nil {
		t.Fatal("Setup with no storage must fail")
	}
}

// TestTheEventStreamKeepsEveryEventButHeartbeats publishes one event of
// every family under a prefix with a dot in it and reads what the stream
// kept: all but the node's heartbeat, a liveness signal whose volume
// follows the node count (events.StoredEvents).
func TestTheEventStreamKeepsEveryEventButHeartbeats(t *testing.T) {
	_, nc := testbus.StartJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := durable.Setup(ctx, nc, "lab.gs", durable.Options{Storage: durable.Memory}); err != nil {
		t.Fatal(err)
	}
	sj := events.NewSubjects("lab.gs")
	kept := []string{sj.JobEvent(events.JobPlaced), sj.GPUEvent("node-1", "node-1-gpu-0", events.GPUStatusType),
		sj.GPUEvent("node-1", "node-1-gpu-0", events.GPUDown), sj.NodeEvent("node-1", events.NodeUp),
		sj.NodeEvent("node-1", events.NodeDown), sj.SchedEvent(events.SchedDecision), sj.SchedEvent(events.SchedUp),
		sj.Metrics(), sj.SecurityEvent("node-cut-off"), sj.ChaosEvent(events.ChaosKillScheduler)}
	js, _ := jetstream.New(nc)
	for _, subject := range append(kept, sj.NodeHeartbeat("node-1")) {
		if !sj.IsEvent(subject) {
			t.Fatalf("%s is not an event's subject", subject)
		}
		if _, err := js.Publish(ctx, subject, []byte(`{}`)); err != nil && subject != sj.NodeHeartbeat("node-1") {
			t.Fatalf("publishing %s: %v", subject, err)
		}
	}
	// A plain publish of the heartbeat, as a node sends it (no stream
	// answers it, so js.Publish above reports no responders).
	if err := nc.Publish(sj.NodeHeartbeat("node-1"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateConsumer(ctx, durable.EventStream(sj.Prefix), jetstream.ConsumerConfig{
		FilterSubject: sj.AllEvents(), AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatalf("a reader of every event (%s) on the stream: %v", sj.AllEvents(), err)
	}
	batch, err := cons.FetchNoWait(100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for m := range batch.Messages() {
		got = append(got, m.Subject())
	}
	if fmtSlice(got) != fmtSlice(kept) {
		t.Fatalf("the stream kept %v\nwant %v", got, kept)
	}
}

func fmtSlice(s []string) string {
	out := "["
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out + "]"
}

// TestTheStopMarkTellsACrashFromACleanStop: a store whose process marked
// itself running and never stopped reads as a crash; a clean stop as one;
// the totals written come back.
func TestTheStopMarkTellsACrashFromACleanStop(t *testing.T) {
	_, nc := testbus.StartJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	j, err := durable.Setup(ctx, nc, "", durable.Options{Storage: durable.Memory})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.MarkRunning(ctx); err != nil {
		t.Fatal(err)
	}
	if err := j.PutTotals(events.Totals{Preemptions: 4, EnergyJ: 10}); err != nil {
		t.Fatal(err)
	}
	if st, err := j.Load(ctx); err != nil || st.Stopped {
		t.Fatalf("a store left running (a crash) reads stopped=%v (%v)", st.Stopped, err)
	}
	if err := j.MarkStopped(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := j.Load(ctx)
	if err != nil || !st.Stopped || st.Totals.Preemptions != 4 || st.Totals.EnergyJ != 10 {
		t.Fatalf("after a clean stop: stopped=%v totals %+v (%v)", st.Stopped, st.Totals, err)
	}
}
