// Package observer owns the observers: clients that attach to a running
// cluster over NATS only, so they can come and go without disturbing it.
// Text renders a live, refreshing picture from cluster.snapshot pages and
// the event stream; Log writes every event as one JSON line.
package observer
