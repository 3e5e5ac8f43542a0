package cluster

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/simclock"
)

// TestADeadSchedulersSubscriptionIsLetGo: a virtual clock counts what
// waits in each scheduler's subscriptions; once one is unsubscribed (its
// scheduler died) the count forgets it, so that the subscription's
// handler — and the dead scheduler it holds, with every job it restored —
// can be collected. Kept, each restart kept its predecessor alive for the
// whole run (simtest seed 360: a live heap of 315 MB instead of 68 MB).
func TestADeadSchedulersSubscriptionIsLetGo(t *testing.T) {
	_, nc := testbus.Start(t)
	v := simclock.NewVirtual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := &Cluster{virtual: v}
	held := new([1 << 20]byte) // what a dead scheduler holds
	gone := weak.Make(held)
	sub, err := subscribeHolding(nc, held)
	if err != nil {
		t.Fatal(err)
	}
	held = nil
	c.watchSubs([]*nats.Subscription{sub})
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	sub = nil
	// One settle: the count finds the subscription closed.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go v.Run(ctx)
	timer := v.NewTimer(time.Second)
	v.Start()
	select {
	case <-timer.C():
		v.Release()
	case <-time.After(30 * time.Second):
		t.Fatal("the clock never settled its first instant")
	}
	testbus.WaitFor(t, "the unsubscribed handler's memory to be collected", 10*time.Second, func() bool {
		runtime.GC()
		return gone.Value() == nil
	})
}

// subscribeHolding subscribes a handler that holds big.
func subscribeHolding(nc *nats.Conn, big *[1 << 20]byte) (*nats.Subscription, error) {
	return nc.Subscribe("gpusched.test.held", func(*nats.Msg) { _ = big[0] })
}
