// Package livetest is test support for observers: a real cluster on a
// random loopback port, a client connected to it, and a running Watcher,
// all stopped when the test ends.
package livetest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/observer"
)

// Cluster starts a cluster of cfg (on a random port) and connects a client.
func Cluster(t testing.TB, cfg cluster.Config) (*cluster.Cluster, *nats.Conn) {
	t.Helper()
	cfg.Listen = "127.0.0.1:-1"
	c, err := cluster.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	nc, err := nats.Connect(c.URL())
	if err != nil {
		c.Stop()
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { nc.Close(); c.Stop() })
	return c, nc
}

// Watcher runs a Watcher of the default-prefixed cluster on nc until the
// test ends.
func Watcher(t testing.TB, nc *nats.Conn, opt observer.WatchOptions) *observer.Watcher {
	t.Helper()
	w, err := observer.NewWatcher(nc, events.NewSubjects(""), opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}
