package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/livetest"
	"github.com/gpusched/gpusched/observer"
)

// TestAnObserverHoldsABoundedNumberOfReaders (issue 42 item 6): an
// observer that makes durable consumers of the event stream one after
// another (as `nats consumer add` would) keeps only its account's bound
// of them; the others are deleted and said (evt.security.reader-refused).
// A push consumer whose deliver subject is a control subject is deleted
// whatever the count. The admin still reads the history from the start.
func TestAnObserverHoldsABoundedNumberOfReaders(t *testing.T) {
	const bound = 4
	s := livetest.SecureCluster(t, cluster.Config{Access: cluster.Access{ReadersPerAccount: bound}, Durability: cluster.Durability{Store: durable.Memory}})
	admin, obs := s.As(t, "admin"), s.As(t, "observer")
	refused := make(chan events.RefusedReader, 64)
	if _, err := admin.Subscribe("gpusched.evt.security."+events.ReaderRefused, func(m *nats.Msg) {
		var env struct{ Data events.RefusedReader }
		if json.Unmarshal(m.Data, &env) == nil {
			refused <- env.Data
		}
	}); err != nil {
		t.Fatal(err)
	}
	admin.Flush()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := jetstream.New(obs)
	if err != nil {
		t.Fatal(err)
	}
	stream := durable.EventStream("gpusched")
	const made = 10
	for i := range made {
		if _, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: fmt.Sprintf("hoard-%d", i), AckPolicy: jetstream.AckNonePolicy}); err != nil {
			t.Fatalf("consumer %d: %v", i, err)
		}
	}
	if _, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "push", DeliverSubject: "gpusched.chaos.kill", AckPolicy: jetstream.AckNonePolicy}); err != nil {
		t.Fatalf("the push consumer: %v", err)
	}

	got := map[string]string{}
	for len(got) < made-bound+1 {
		select {
		case r := <-refused:
			if r.Account != auth.ObserverAccount("observer") {
				t.Fatalf("a reader of account %q refused, want the observer's %q", r.Account, auth.ObserverAccount("observer"))
			}
			got[r.Consumer] = r.Reason
		case <-ctx.Done():
			t.Fatalf("refused %d readers before the deadline (%v), want %d", len(got), got, made-bound+1)
		}
	}
	if reason := got["push"]; reason == "" {
		t.Fatalf("the push consumer was not refused: %v", got)
	}
	ctl, err := nats.Connect("", s.Cluster.InProcessOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	cjs, _ := jetstream.New(ctl)
	st, err := cjs.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	names := st.ConsumerNames(ctx)
	for n := range names.Name() {
		left[n] = true
	}
	for i := range made {
		name := fmt.Sprintf("hoard-%d", i)
		if _, wasRefused := got[name]; left[name] == wasRefused {
			t.Errorf("consumer %s: left %v, refused %v", name, left[name], wasRefused)
		}
	}
	if left["push"] || len(left) > bound+1 {
		t.Fatalf("the stream keeps %v, want at most the observer's %d (and the admin's)", left, bound)
	}

	// The admin's own account is not the observer's: it reads the history.
	read, stop := context.WithCancel(ctx)
	n := 0
	err = observer.ReadEvents(read, admin, events.NewSubjects("gpusched"), observer.History{FromStart: true}, func(string, []byte) error {
		if n++; n == 5 {
			stop()
		}
		return nil
	})
	stop()
	if err != nil && !errors.Is(err, context.Canceled) || n < 5 {
		t.Fatalf("the admin read %d events of the history: %v", n, err)
	}
}
