// Command observer attaches to a running cluster over NATS only: the live
// text view (the default) or every event as one JSON line (observer log).
package main
