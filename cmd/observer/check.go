package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/observer"
)

// runCheck is `observer check`: it asserts the invariants live, prints each
// violation at once and a summary on exit, and returns the exit code (1 on
// any violation).
func runCheck(ctx context.Context, nc *nats.Conn, subjects events.Subjects, url string, d time.Duration, asJSON bool, h observer.History) int {
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	until := "Ctrl-C for the summary"
	if d > 0 {
		until = "for " + d.String()
	}
	fmt.Fprintf(os.Stderr, "observer check: checking every event of %s (%s)\n", url, until)
	c := observer.NewChecker()
	if err := observer.CheckHistory(ctx, nc, subjects, h, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "observer check:", err)
		return 1
	}
	s := c.Summary()
	if asJSON {
		json.NewEncoder(os.Stdout).Encode(s)
	} else {
		s.Write(os.Stdout)
	}
	if len(s.Violations) > 0 {
		return 1
	}
	return 0
}
