package cluster_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/internal/livetest"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/policy"
)

// The end-to-end tests talk to the cluster the way any client would: a
// plain nats.go connection and raw JSON. Only the cluster's start-up uses
// the project's packages.

func TestMain(m *testing.M) {
	// Every decision of every test checks the scheduler's index against a
	// scan: a change the view did not Touch fails the test that made it.
	policy.VerifyIndex = true
	goleak.VerifyTestMain(m)
}

// startCluster runs a cluster on a random port and stops it when the test ends.
func startCluster(t testing.TB, cfg cluster.Config) (*cluster.Cluster, *nats.Conn) {
	t.Helper()
	if cfg.Speed == 0 {
		cfg.Speed = 1
	}
	return livetest.Cluster(t, cfg)
}

type obj = map[string]any

// req sends body (a JSON string or a value) and decodes the reply into a map.
func req(t testing.TB, nc *nats.Conn, subject string, body any) obj {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	msg, err := nc.Request(subject, b, 5*time.Second)
	if err != nil {
		t.Fatalf("request %s %s: %v", subject, b, err)
	}
	var out obj
	if err := json.Unmarshal(msg.Data, &out); err != nil {
		t.Fatalf("reply to %s is not JSON: %s", subject, msg.Data)
	}
	return out
}

// submit submits a job and returns its id, failing on an error reply.
func submit(t testing.TB, nc *nats.Conn, body string) string {
	t.Helper()
	rep := req(t, nc, "gpusched.job.submit", body)
	if rep["error"] != nil {
		t.Fatalf("submit %s: %v", body, rep["error"])
	}
	return rep["job_id"].(string)
}

func getJob(t testing.TB, nc *nats.Conn, id string) obj {
	t.Helper()
	rep := req(t, nc, "gpusched.job.get", obj{"job_id": id})
	if rep["error"] != nil {
		t.Fatalf("job.get %s: %v", id, rep["error"])
	}
	return rep
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	testbus.WaitFor(t, what, timeout, cond)
}

// waitState waits until a job reaches state and returns it.
func waitState(t testing.TB, nc *nats.Conn, id, state string, timeout time.Duration) obj {
	t.Helper()
	var j obj
	waitFor(t, fmt.Sprintf("job %s to be %s", id, state), timeout, func() bool {
		j = getJob(t, nc, id)
		return j["state"] == state
	})
	return j
}

func gpuIDs(j obj) string {
	ids, _ := j["gpu_ids"].([]any)
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += ","
		}
		s += id.(string)
	}
	return s
}

// eventLog records every event of the cluster, in arrival order.
type eventLog struct {
	mu     sync.Mutex
	events []obj
	sub    *nats.Subscription
}

func recordEvents(t testing.TB, nc *nats.Conn, subject string) *eventLog {
	t.Helper()
	l := &eventLog{}
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		var ev obj
		if json.Unmarshal(m.Data, &ev) != nil {
			ev = obj{"invalid": string(m.Data)}
		}
		ev["_subject"] = m.Subject
		l.mu.Lock()
		l.events = append(l.events, ev)
		l.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	sub.SetPendingLimits(-1, -1)
	l.sub = sub
	nc.Flush()
	return l
}

func (l *eventLog) snapshot() []obj {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]obj(nil), l.events...)
}

// find returns the events of type typ about subject (the job or GPU id).
func (l *eventLog) find(typ, subject string) []obj {
	var out []obj
	for _, ev := range l.snapshot() {
		if ev["type"] == typ && (subject == "" || ev["subject"] == subject) {
			out = append(out, ev)
		}
	}
	return out
}

// tryReq is req that returns nil instead of failing when nothing answers
// (a restarting scheduler).
func tryReq(nc *nats.Conn, subject, body string) obj {
	msg, err := nc.Request(subject, []byte(body), 2*time.Second)
	if err != nil {
		return nil
	}
	var out obj
	if json.Unmarshal(msg.Data, &out) != nil {
		return nil
	}
	return out
}
