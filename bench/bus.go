package bench

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// Latencies are sorted round trips or hops.
type Latencies []time.Duration

// P is the p-th quantile (0.5: the median).
func (l Latencies) P(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	return l[min(len(l)-1, int(p*float64(len(l))))]
}

func (l Latencies) sorted() Latencies {
	slices.Sort(l)
	return l
}

// submitBody is the whole-path benchmarks' job: 4 GiB and 1% util, so an
// A100 takes 9 or 18 (about as many as a real one would run) and rounds of
// 80 fit the reference cluster; no CPU or
// memory, so nodes never run short; it never ends during a run.
const submitBody = `{"name":"bench","priority":"medium","vram":"4GiB","util":1,"duration":"1000h","cpu":0,"memory":0}`

// replyBody is a submit reply of the usual size.
const replyBody = `{"job_id":"3f97a168-d8d0-4719-b4cf-aead2a82fbab","state":"placed","node":"node-0","gpus":["gpu-0"]}`

// eventBody is a job event of the usual size (what observers receive).
var eventBody = []byte(`{"id":"0a4b2f6e-8c1d-4e0a-9b7c-2d5f3e1a9c8b","source":"/scheduler/1","type":"job.placed","time":"2026-12-02T10:00:00.123456789Z","seq":1234,` +
	`"data":{"job_id":"3f97a168-d8d0-4719-b4cf-aead2a82fbab","name":"bench","state":"placed","node":"node-0","gpus":["gpu-0"],"priority":"medium",` +
	`"decision":{"policy":"binpack","candidates":[{"node":"node-0","gpus":["gpu-0"],"score":37}]}}}`)

// RoundTrip measures n NATS request-reply round trips from client to an
// echo responder on responder (which answers with a submit reply), with
// the submit body as the request.
func RoundTrip(client, responder *nats.Conn, n int) (Latencies, error) {
	subject := nats.NewInbox()
	sub, err := responder.Subscribe(subject, func(m *nats.Msg) { m.Respond([]byte(replyBody)) })
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := responder.Flush(); err != nil {
		return nil, err
	}
	lats, err := requestLatencies(client, subject, n)
	if err != nil {
		return nil, fmt.Errorf("bus round trip: %w", err)
	}
	return lats, nil
}

// requestLatencies sends the submit body to subject n times one at a
// time, after a tenth more to warm up, and returns the round trips sorted.
func requestLatencies(client *nats.Conn, subject string, n int) (Latencies, error) {
	lats := make(Latencies, 0, n)
	for i := 0; i < n+n/10; i++ {
		start := time.Now()
		if _, err := client.Request(subject, []byte(submitBody), 5*time.Second); err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		if i >= n/10 { // the first tenth warms up
			lats = append(lats, time.Since(start))
		}
	}
	return lats.sorted(), nil
}

// Hop measures n publish→subscribe hops of an event-sized message, one
// at a time (each publish waits for the previous delivery).
func Hop(pub, sub *nats.Conn, n int) (Latencies, error) {
	subject := nats.NewInbox()
	got := make(chan time.Duration, 1)
	var sent atomic.Int64
	s, err := sub.Subscribe(subject, func(*nats.Msg) { got <- time.Duration(time.Now().UnixNano() - sent.Load()) })
	if err != nil {
		return nil, err
	}
	defer s.Unsubscribe()
	if err := sub.Flush(); err != nil {
		return nil, err
	}
	lats := make(Latencies, 0, n)
	for i := 0; i < n+n/10; i++ {
		sent.Store(time.Now().UnixNano())
		if err := pub.Publish(subject, eventBody); err != nil {
			return nil, err
		}
		select {
		case d := <-got:
			if i >= n/10 {
				lats = append(lats, d)
			}
		case <-time.After(5 * time.Second):
			return nil, fmt.Errorf("a published message did not arrive within 5s")
		}
	}
	return lats.sorted(), nil
}
