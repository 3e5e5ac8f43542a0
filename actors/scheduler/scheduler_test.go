package scheduler

import (
	"errors"
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
	_, nc := testbus.Start(t)
	subjects := events.NewSubjects("")
	s, err := New(Config{Config: core.Config{Subjects: subjects}, Conn: nc, Clock: simclock.NewScaled(time.Now(), 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.unsubscribe()
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
