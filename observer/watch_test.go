package observer_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/observer"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestWatcherWaitsAndResynchronises starts an observer before any cluster:
// it waits, attaches when the cluster comes, and when the cluster goes away
// and another comes back on the same address (with another policy) it
// reconnects and resynchronises from a snapshot.
func TestWatcherWaitsAndResynchronises(t *testing.T) {
	addr := "127.0.0.1:" + freePort(t)
	nc, err := nats.Connect("nats://"+addr, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1),
		nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	w, err := observer.NewWatcher(nc, events.NewSubjects(""), observer.WatchOptions{Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	testbus.WaitFor(t, "the watcher to report it is waiting", 5*time.Second, func() bool {
		st := w.State()
		return st.Snapshot == nil && st.Err != ""
	})
	first, err := cluster.Start(context.Background(), cluster.Config{Access: cluster.Access{Listen: addr}, Scheduling: cluster.Scheduling{Policy: "binpack"}, Timing: cluster.Timing{Speed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	testbus.WaitFor(t, "the watcher to attach", 10*time.Second, func() bool {
		st := w.State()
		return st.Snapshot != nil && st.Snapshot.Policy == "binpack" && st.Connected
	})
	first.Stop()
	testbus.WaitFor(t, "the watcher to notice the bus is gone", 10*time.Second, func() bool { return !w.State().Connected })
	second, err := cluster.Start(context.Background(), cluster.Config{Access: cluster.Access{Listen: addr}, Scheduling: cluster.Scheduling{Policy: "spread"}, Timing: cluster.Timing{Speed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop()
	testbus.WaitFor(t, "the watcher to resynchronise on the new cluster", 10*time.Second, func() bool {
		st := w.State()
		return st.Connected && st.Resyncs >= 1 && st.Snapshot != nil && st.Snapshot.Policy == "spread"
	})
}
