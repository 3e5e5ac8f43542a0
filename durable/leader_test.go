package durable

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpusched/gpusched/internal/testbus"
)

// TestASecondLeaderFencesTheFirstOut: two control planes on one store.
// The first leads and writes; the second takes the store over; from then
// on every write of the first — a record, its alive mark, a meta key — is
// refused by the store (ErrDeposed, also through OnError for a record
// written without waiting), and the second's are stored. A third taking
// over on a stale revision loses the race (ErrLeadTaken).
func TestASecondLeaderFencesTheFirstOut(t *testing.T) {
	ns, _ := testbus.StartJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	journal := func() *Journal {
		c, err := nats.Connect(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		j, err := Setup(ctx, c, "gpusched", Options{Storage: File})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	a, b := journal(), journal()
	termA, err := a.Lead(ctx, "a")
	if err != nil || termA == 0 {
		t.Fatalf("a leads: %d, %v", termA, err)
	}
	if err := a.Renew(ctx); err != nil {
		t.Fatalf("a renews: %v", err)
	}
	if f, err := a.Put(&Record{JobID: "j1", State: "queued"}); err != nil {
		t.Fatal(err)
	} else if err := wait(f); err != nil {
		t.Fatalf("a's record before b leads: %v", err)
	}
	termB, err := b.Lead(ctx, "b")
	if err != nil || termB <= termA {
		t.Fatalf("b takes over: term %d after %d, %v", termB, termA, err)
	}
	if err := a.Renew(ctx); !IsDeposed(err) {
		t.Fatalf("a renews after b took over: %v, want deposed", err)
	}
	if err := a.SetIncarnation(ctx, 99); !errors.Is(err, ErrDeposed) {
		t.Fatalf("a writes a meta key after b took over: %v, want ErrDeposed", err)
	}
	failed := make(chan error, 1)
	a.OnError(func(id string, err error) {
		if id == "j1" {
			failed <- err
		}
	})
	if _, err := a.Put(&Record{JobID: "j1", State: "running"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		if !IsDeposed(err) {
			t.Fatalf("a's record after b took over failed with %v, want deposed", err)
		}
	case <-ctx.Done():
		t.Fatal("a's record after b took over was not refused")
	}
	if f, err := b.Put(&Record{JobID: "j1", State: "completed"}); err != nil {
		t.Fatal(err)
	} else if err := wait(f); err != nil {
		t.Fatalf("b's record: %v", err)
	}
	st, err := b.Load(ctx)
	if err != nil || len(st.Jobs) != 1 || st.Jobs[0].State != "completed" {
		t.Fatalf("the journal holds %+v (%v), want j1 completed by b", st.Jobs, err)
	}
	// c read the leadership before b's renewal … a stale revision loses.
	c := journal()
	if _, err := c.kv.Update(ctx, leaderKey, []byte("c"), termA); err == nil {
		t.Fatal("a leadership taken on a stale revision")
	}
	if _, err := c.Lead(ctx, "c"); err != nil {
		t.Fatalf("c takes over from b: %v", err)
	}
	if err := b.Renew(ctx); !IsDeposed(err) {
		t.Fatalf("b renews after c took over: %v, want deposed", err)
	}
}

// wait is what the store said of a write made without waiting.
func wait(f jetstream.PubAckFuture) error {
	select {
	case <-f.Ok():
		return nil
	case err := <-f.Err():
		return err
	case <-time.After(10 * time.Second):
		return errors.New("unconfirmed")
	}
}
