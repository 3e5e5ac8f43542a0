package gpu

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/simclock"
)

// TestADrainedMailboxTakesNoMoreMail: a dead actor's supervisor drains
// its mailbox; a control or a lease renewal its router or node had in
// hand then must be refused, not left in a mailbox no one reads holding
// a virtual clock (which would then stand still for good). The clock
// moving on to a timer after them shows that nothing holds it.
func TestADrainedMailboxTakesNoMoreMail(t *testing.T) {
	clock := simclock.NewVirtual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m, err := model.LookupModel("A100-40GB")
	if err != nil {
		t.Fatal(err)
	}
	a := New(Config{ID: "gpu-0", Node: "node-0", Model: m, Clock: clock})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if !a.Deliver(ctx, &nats.Msg{Subject: "x", Data: []byte(`{"op":"describe"}`)}) {
		t.Fatal("a live actor's mailbox refused a control")
	}
	a.Renew(1, clock.Now().Add(time.Hour))
	if n := a.Drain(); n != 1 {
		t.Fatalf("drained %d messages, want 1", n)
	}
	if a.Deliver(ctx, &nats.Msg{Subject: "x", Data: []byte(`{"op":"describe"}`)}) {
		t.Fatal("a drained mailbox took a control")
	}
	a.Renew(1, clock.Now().Add(2*time.Hour))
	timer := clock.NewTimer(time.Minute)
	go clock.Run(ctx)
	clock.Start()
	select {
	case <-timer.C():
		clock.Release()
	case <-time.After(10 * time.Second):
		t.Fatal("the clock stood still: a hold taken for the dead actor's mail was never let go")
	}
	clock.Stop()
	<-clock.Done()
}
