package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/simclock"
)

// TestARequestADeadSchedulerNeverHandledIsAnsweredNoResponders: a submit
// waits in the mailbox of a scheduler that dies before handling it. Its
// client hears "no responders", as if nobody had received it, and may
// send it again at once. Before, it was never answered: the job
// generator, which waits without a deadline, stopped for good.
func TestARequestADeadSchedulerNeverHandledIsAnsweredNoResponders(t *testing.T) {
	s, nc, subjects := newIdleScheduler(t)
	answer := make(chan error, 1)
	go func() {
		_, err := nc.Request(subjects.JobSubmit(), []byte(`{"name":"unlucky","vram":"1GB"}`), 10*time.Second)
		answer <- err
	}()
	// Not running: the submit stays in the mailbox, as when a kill was
	// handled before it.
	testbus.WaitFor(t, "the submit in the mailbox", 5*time.Second, func() bool { return len(s.mailbox) == 1 })
	if n := s.Drain(); n != 1 {
		t.Fatalf("drained %d messages, want the submit", n)
	}
	select {
	case err := <-answer:
		if !errors.Is(err, nats.ErrNoResponders) {
			t.Fatalf("the client heard %v, want no responders", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the client heard nothing")
	}
}

// TestTheShellServesTheCoreOverTheBus runs the scheduler's shell on a
// real server with no GPUs: a malformed submission is answered with an
// error naming its field, a good one is queued (nothing to run it) and
// job.get says why it waits, a cancel ends it, and the shell stops
// cleanly when its context ends (no goroutine left: TestMain).
func TestTheShellServesTheCoreOverTheBus(t *testing.T) {
	_, nc := testbus.Start(t)
	subjects := events.NewSubjects("")
	s, err := New(Config{Config: core.Config{Subjects: subjects}, Conn: nc, Clock: simclock.NewScaled(time.Now(), 60)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- s.Run(ctx) }()
	request := func(subject, body string, into any) {
		t.Helper()
		m, err := nc.Request(subject, []byte(body), 5*time.Second)
		if err != nil {
			t.Fatalf("%s %s: %v", subject, body, err)
		}
		if err := json.Unmarshal(m.Data, into); err != nil {
			t.Fatalf("%s: reply %s: %v", subject, m.Data, err)
		}
	}
	var bad events.ErrorReply
	request(subjects.JobSubmit(), `{"name":"bad","vram":"12GB","util":250,"duration":"1h"}`, &bad)
	if bad.Error == nil || bad.Error.Field != "util" {
		t.Fatalf("util 250: %+v, want an error naming util", bad)
	}
	var rep events.SubmitReply
	request(subjects.JobSubmit(), `{"name":"waits","vram":"12GB","duration":"1h"}`, &rep)
	if rep.JobID == "" || rep.State != events.JobQueued {
		t.Fatalf("a job on a cluster with no GPU: %+v, want queued", rep)
	}
	var info events.JobInfo
	testbus.WaitFor(t, "the job to say why it waits", 5*time.Second, func() bool {
		request(subjects.JobGet(), `{"job_id":"`+rep.JobID+`"}`, &info)
		return info.Reason != ""
	})
	if !strings.Contains(info.Reason, "no GPU") {
		t.Fatalf("its reason: %q, want one saying no GPU has joined", info.Reason)
	}
	var cancelled events.JobInfo
	request(subjects.JobCancel(), `{"job_id":"`+rep.JobID+`"}`, &cancelled)
	request(subjects.JobGet(), `{"job_id":"`+rep.JobID+`"}`, &info)
	if info.State != events.JobCancelled {
		t.Fatalf("after the cancel: %s, want cancelled", info.State)
	}
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("the shell stopped with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the shell did not stop when its context ended")
	}
}

// TestWhatACutOffSchedulerKeepsIsWhatItWasAsked: a cut-off scheduler keeps
// the controls its core asks for until it heals. The Ready they came in
// is the core's slice, which its next step writes over: what is kept must
// be the control as asked, not whatever that slot holds by the heal.
func TestWhatACutOffSchedulerKeepsIsWhatItWasAsked(t *testing.T) {
	s, nc, _ := newIdleScheduler(t)
	got, err := nc.SubscribeSync("kept.>")
	if err != nil {
		t.Fatal(err)
	}
	s.cutUntil = time.Now().Add(time.Hour)
	effects := make([]core.Effect, 1) // one slot, reused as the core reuses its own
	for _, subject := range []string{"kept.first", "kept.second"} {
		effects[0] = core.Effect{Kind: core.Send, Subject: subject, Body: []byte(`{"op":"abort"}`)}
		s.carryOut(core.Ready{Effects: effects})
	}
	if len(s.outbox) != 2 {
		t.Fatalf("%d messages kept while cut off, want 2", len(s.outbox))
	}
	for _, send := range s.outbox { // the heal sends what was kept, in order
		if err := send(); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"kept.first", "kept.second"} {
		m, err := got.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("waiting for %s: %v", want, err)
		}
		if m.Subject != want {
			t.Errorf("kept message went to %s, want %s", m.Subject, want)
		}
	}
}

// newIdleScheduler is a scheduler on a test bus, subscribed and not
// running (its loop is the test's to drive), with its connection and
// subjects; it unsubscribes when the test ends.
func newIdleScheduler(t *testing.T) (*Scheduler, *nats.Conn, events.Subjects) {
	t.Helper()
	_, nc := testbus.Start(t)
	subjects := events.NewSubjects("")
	s, err := New(Config{Config: core.Config{Subjects: subjects}, Conn: nc, Clock: simclock.NewScaled(time.Now(), 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.unsubscribe)
	return s, nc, subjects
}
