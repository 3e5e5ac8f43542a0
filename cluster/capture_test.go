package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/livetest"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/observer"
)

// pendingOn is how many events the event stream holds under subject,
// asked as the observer may ask (a consumer filtered on it).
func pendingOn(t *testing.T, js jetstream.JetStream, subject string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := js.CreateConsumer(ctx, durable.EventStream("gpusched"), jetstream.ConsumerConfig{
		FilterSubject: subject, AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatalf("a consumer on %s: %v", subject, err)
	}
	return cons.CachedInfo().NumPending
}

// TestAnObserverCannotWriteTheEventHistory (issue 42, items 1 and 2): an
// observer may read the event history (from the start, and as a durable
// reader) — and pulls the stream with reply subjects under the event
// subjects, batch after batch, among them one whose stored subject names
// a roles-file node (node-0's GPU events). The server delivers the copies
// into the observer's own account: the event stream stores none of them
// and loses nothing it held, and node-0 is charged nothing, so it is not
// cut off by a budget the copies would have spent four times over.
func TestAnObserverCannotWriteTheEventHistory(t *testing.T) {
	budget := auth.EventBudget{Rate: model.KiB, Burst: 32 * model.KiB, CoolOff: time.Minute}
	// The attack makes 200 consumers; the bound on them (and so the
	// reader warden) is another test's (TestAnObserverHoldsABoundedNumberOfReaders).
	s := livetest.SecureCluster(t, cluster.Config{Access: cluster.Access{NodeEventBudget: budget, ReadersPerAccount: -1}, Durability: cluster.Durability{Store: durable.Memory}})
	admin, obs := s.As(t, "admin"), s.As(t, "observer")
	security := make(chan string, 16)
	if _, err := admin.Subscribe("gpusched.evt.security.*", func(m *nats.Msg) { security <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	admin.Flush()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	subjects := events.NewSubjects("gpusched")

	// The history reads across the observer's import: from the start and
	// as a durable reader, each up to an event of node-0's GPUs.
	ofNode0 := subjects.NodeGPUEvents("node-0")
	for _, h := range []observer.History{{FromStart: true}, {FromStart: true, Durable: "audit"}} {
		read, stop := context.WithCancel(ctx)
		n := 0
		err := observer.ReadEvents(read, obs, subjects, h, func(subject string, _ []byte) error {
			n++
			if strings.HasPrefix(subject, strings.TrimSuffix(ofNode0, ">")) {
				stop()
			}
			return nil
		})
		stop()
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("reading the history (%+v): %v", h, err)
		}
		if n == 0 || ctx.Err() != nil {
			t.Fatalf("reading the history (%+v): %d events before the deadline", h, n)
		}
	}

	js, err := jetstream.New(obs)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, durable.EventStream("gpusched"))
	if err != nil {
		t.Fatal(err)
	}
	first := stream.CachedInfo().State.FirstSeq
	// The attack: batches pulled to reply subjects under the events.
	copies, err := obs.SubscribeSync("gpusched.evt.gpu.node-0.zz")
	if err != nil {
		t.Fatal(err)
	}
	copies.SetPendingLimits(-1, -1)
	obs.Flush()
	cons, err := js.CreateConsumer(ctx, durable.EventStream("gpusched"), jetstream.ConsumerConfig{
		FilterSubject: ofNode0, AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	held := cons.CachedInfo().NumPending
	if held == 0 {
		t.Fatal("the stream holds no event of node-0's GPUs to replay")
	}
	const rounds = 100
	for range rounds {
		for _, reply := range []string{"gpusched.evt.gpu.node-0.zz", "gpusched.evt.zz"} {
			replay, err := js.CreateConsumer(ctx, durable.EventStream("gpusched"), jetstream.ConsumerConfig{
				FilterSubject: ofNode0, AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
			if err != nil {
				t.Fatal(err)
			}
			if err := obs.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+durable.EventStream("gpusched")+"."+replay.CachedInfo().Name,
				reply, []byte(`{"batch":1000}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	obs.Flush()
	// The copies arrive: where the server put them is the observer's
	// own account.
	var bytes int
	deadline := time.Now().Add(10 * time.Second)
	for bytes < 4*int(budget.Burst) && time.Now().Before(deadline) {
		m, err := copies.NextMsg(time.Until(deadline))
		if err != nil {
			break
		}
		bytes += len(m.Data)
	}
	// The stream holds every event once: a copy stored again would repeat
	// its event id.
	ids := map[string]int{}
	all, err := js.CreateConsumer(ctx, durable.EventStream("gpusched"), jetstream.ConsumerConfig{
		FilterSubject: subjects.AllEvents(), AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	for left := all.CachedInfo().NumPending; left > 0; {
		batch, err := all.Fetch(int(min(left, 500)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			var ev struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(m.Data(), &ev) == nil && ev.ID != "" {
				ids[ev.ID]++
			}
		}
		if got == 0 {
			t.Fatalf("the stream's events stopped coming with %d left", left)
		}
		left -= uint64(got)
	}
	for id, n := range ids {
		if n > 1 {
			t.Errorf("event %s is stored %d times: the stream stored copies", id, n)
			break
		}
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.FirstSeq != first {
		t.Errorf("the stream's first event went from %d to %d: history was evicted", first, info.State.FirstSeq)
	}
	// The budget keeper counts as the copies pass, long before the stream
	// has answered the requests made after them: a cut-off would be said
	// by now.
	select {
	case subject := <-security:
		t.Errorf("%s after the observer's replays: a node was charged for copies it did not send", subject)
	default:
	}
	t.Logf("%d bytes of copies of %d events of node-0's GPUs reached the observer's account; the stream holds %d events, each once", bytes, held, len(ids))
	if bytes < 4*int(budget.Burst) {
		t.Fatalf("only %d bytes of copies reached the observer: the attack did not run", bytes)
	}
}

// TestARequestIsNotAnsweredOnTheClustersOwnSubjects (issue 42, item 3):
// a node — the one role that shares the control plane's account and so
// names its reply subjects there — asks for snapshots with reply subjects
// under its own events, under the cluster's events, and the JetStream API
// subject that deletes the event stream. None is answered: no snapshot is
// stored or charged as an event, and the stream is not deleted by an
// answer published with the control plane's rights. A request with an
// inbox is answered as before.
func TestARequestIsNotAnsweredOnTheClustersOwnSubjects(t *testing.T) {
	s := livetest.SecureCluster(t, cluster.Config{Durability: cluster.Durability{Store: durable.Memory}})
	node, obs := s.As(t, "node-0", nats.CustomInboxPrefix(auth.NodeInboxPrefix("node-0"))), s.As(t, "observer")
	for _, reply := range []string{"gpusched.evt.gpu.node-0.snap", "gpusched.evt.zz",
		"$JS.API.STREAM.DELETE." + durable.EventStream("gpusched"), "$KV." + durable.JobBucket("gpusched") + ".planted"} {
		if err := node.PublishRequest("gpusched.cluster.snapshot", reply, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	// The scheduler takes requests in order: once this one is answered,
	// the ones before it have been handled.
	snap := mustAsk(t, node, "gpusched.cluster.snapshot", `{}`)
	if _, ok := snap["gpus"]; !ok {
		t.Fatalf("a snapshot to an inbox was not answered: %v", snap)
	}
	js, err := jetstream.New(obs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Stream(ctx, durable.EventStream("gpusched")); err != nil {
		t.Fatalf("the event stream after a snapshot answered to its delete subject: %v", err)
	}
	for _, subject := range []string{"gpusched.evt.gpu.node-0.snap", "gpusched.evt.zz"} {
		if n := pendingOn(t, js, subject); n != 0 {
			t.Errorf("the event stream stored %d snapshots under %s", n, subject)
		}
	}
	// The journal has no record the answer would have written.
	if rep, err := ask(s.As(t, "admin"), "gpusched.job.get", `{"job_id":"planted"}`); err != nil || rep["error"] == nil {
		t.Fatalf("job.get planted: %v %v, want no such job", rep, err)
	}
}

// TestAReplayedJobEventIsNotJudgedByALiveChecker (issue 42 item 6): an
// observer pulls the stored job events (placements, completions) onto the
// live job subjects its own account sees, where a checker it runs is
// listening. The copies arrive — but a JetStream delivery is no event: the
// checker judges none of them (before, replayed job events gave the live
// checker 58 false violations).
func TestAReplayedJobEventIsNotJudgedByALiveChecker(t *testing.T) {
	s := livetest.SecureCluster(t, cluster.Config{Seed: 5, Access: cluster.Access{ReadersPerAccount: -1}, Arrivals: cluster.Arrivals{Rate: 600}, Timing: cluster.Timing{Speed: 3600}, Durability: cluster.Durability{Store: durable.Memory}})
	obs := s.As(t, "observer")
	subjects := events.NewSubjects("gpusched")
	checker := observer.NewChecker()
	sub, err := observer.SubscribeChecker(obs, subjects, checker, nopWriter{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "jobs to complete", 30*time.Second, func() bool { return checker.Summary().Completed >= 5 })
	copies, err := obs.SubscribeSync("gpusched.evt.job.replayed")
	if err != nil {
		t.Fatal(err)
	}
	obs.Flush()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js, err := jetstream.New(obs)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateConsumer(ctx, durable.EventStream("gpusched"), jetstream.ConsumerConfig{
		FilterSubject: "gpusched.evt.job.>", AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+durable.EventStream("gpusched")+"."+cons.CachedInfo().Name,
		"gpusched.evt.job.replayed", []byte(`{"batch":1000}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := copies.NextMsg(10 * time.Second); err != nil {
		t.Fatalf("no stored job event came back onto the live subjects: %v", err)
	}
	observer.DrainChecker(obs, sub)
	if v := checker.Summary().Violations; len(v) > 0 {
		t.Fatalf("%d violations from replayed job events; the first: %s", len(v), v[0])
	}
}
