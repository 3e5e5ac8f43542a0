package cluster_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/observer"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestALiveCheckerResyncsAfterItsConnectionDropped (issue 21 item 8): a
// live `observer check` whose connection drops and comes back (as the
// server drops a stopped reader) says it fell behind and resynchronises
// from a snapshot, and what it then checks raises no false alarm.
func TestALiveCheckerResyncsAfterItsConnectionDropped(t *testing.T) {
	c, nc := startCluster(t, cluster.Config{})
	conn, err := c.Client("checker", nats.ReconnectWait(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	checker := observer.NewChecker()
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- observer.CheckLive(ctx, conn, events.NewSubjects(events.DefaultPrefix), checker, &out) }()
	t.Cleanup(func() { cancel(); <-done })
	// CheckLive subscribes on its own goroutine: the first event it takes
	// says it is reading (nodes beat every period), so the job is not sent
	// before the checker listens.
	waitFor(t, "the checker to read its first event", 5*time.Second, func() bool { return checker.Summary().Events >= 1 })
	a := submit(t, nc, `{"name":"before","vram":"10GB","util":20,"duration":"1h"}`)
	waitFor(t, "the checker to see the first job", 5*time.Second, func() bool { return checker.Summary().Jobs >= 1 })
	if err := conn.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the checker to say it resynchronised", 10*time.Second, func() bool {
		return strings.Contains(out.String(), "resynchronised from a snapshot")
	})
	req(t, nc, "gpusched.job.cancel", map[string]string{"job_id": a})
	b := submit(t, nc, `{"name":"after","vram":"10GB","util":20,"duration":"1h"}`)
	waitFor(t, "the checker to see the job after", 5*time.Second, func() bool { return checker.Summary().Jobs >= 2 })
	s := checker.Summary()
	if s.FellBehind != 1 || len(s.Violations) != 0 {
		t.Fatalf("fell behind %d, violations %v (job %s); output:\n%s", s.FellBehind, s.Violations, b, out.String())
	}
}
