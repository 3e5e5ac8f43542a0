package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/internal/livetest"
)

// TestAStoredMessageReplayedToAControlSubjectIsNotActedOn (issue 22, item
// 1): a node publishes a chaos body under its own event subject; the event
// stream stores it; an observer, who may read the stream, pulls it with
// the control subject gpusched.chaos.kill as the pull's reply subject, so
// that the server delivers it there inside the control plane's account.
// The chaos responder must not kill anything: a message replayed from a
// stream was sent by no one who may send it. The same for a GPU's control
// subject.
func TestAStoredMessageReplayedToAControlSubjectIsNotActedOn(t *testing.T) {
	s := livetest.SecureCluster(t, cluster.Config{Durability: cluster.Durability{Store: durable.Memory}})
	admin, observer, node0 := s.As(t, "admin"), s.As(t, "observer"), s.As(t, "node-0")
	chaosEvents := make(chan *nats.Msg, 16)
	sub, err := admin.ChanSubscribe("gpusched.evt.chaos.>", chaosEvents)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	incarnation := func(gpu string) float64 {
		for _, g := range mustAsk(t, admin, "gpusched.cluster.snapshot", `{}`)["gpus"].([]any) {
			if g.(obj)["gpu"] == gpu {
				return g.(obj)["incarnation"].(float64)
			}
		}
		t.Fatalf("no %s in the snapshot", gpu)
		return 0
	}
	before := incarnation("gpu-3")
	if err := node0.Publish("gpusched.evt.gpu.node-0.x.kill", []byte(`{"gpu":"gpu-3"}`)); err != nil {
		t.Fatal(err)
	}
	if err := node0.Publish("gpusched.evt.gpu.node-0.y.kill", []byte(`{"op":"kill","reason":"replayed"}`)); err != nil {
		t.Fatal(err)
	}
	node0.Flush()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(observer)
	if err != nil {
		t.Fatal(err)
	}
	pull := func(filter, replyTo string) {
		t.Helper()
		cons, err := js.CreateConsumer(ctx, durable.EventStream("gpusched"), jetstream.ConsumerConfig{FilterSubject: filter, AckPolicy: jetstream.AckNonePolicy})
		if err != nil {
			t.Fatal(err)
		}
		name := cons.CachedInfo().Name
		if err := observer.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+durable.EventStream("gpusched")+"."+name, replyTo, []byte(`{"batch":1}`)); err != nil {
			t.Fatal(err)
		}
		observer.Flush()
	}
	pull("gpusched.evt.gpu.node-0.x.kill", "gpusched.chaos.kill")
	pull("gpusched.evt.gpu.node-0.y.kill", "gpusched.gpu.node-0.gpu-3.ctl")
	// A request of the admin's own, after the replayed ones: the responder
	// and the GPU take messages in order, so once it is answered the
	// replayed ones have been handled (or ignored).
	mustAsk(t, admin, "gpusched.chaos.delay", `{"gpu":"gpu-3","delay":"0s"}`)
	select {
	case m := <-chaosEvents:
		if strings.HasSuffix(m.Subject, ".kill") {
			t.Fatalf("a replayed message killed a GPU: %s %s", m.Subject, m.Data)
		}
	default:
	}
	if after := incarnation("gpu-3"); after != before {
		t.Fatalf("gpu-3 went from incarnation %v to %v: a replayed control was acted on", before, after)
	}
}

// TestAReplayedHeartbeatKeepsNoDeadNodeAlive (issue 22, item 4): after a
// node crashes, an observer has the event stream re-deliver a heartbeat of
// the node to the node's heartbeat subject every 200 ms (a pull whose reply
// subject is that subject). The stream keeps no heartbeat
// (events.StoredEvents), so the node itself planted one before it crashed:
// a copy of its last heartbeat, published on a GPU event subject of its
// own, which the stream keeps. Liveness is taken only from what the node
// itself sends live: the node is declared down within its lease as if
// nobody replayed anything.
func TestAReplayedHeartbeatKeepsNoDeadNodeAlive(t *testing.T) {
	const lease = 2 * time.Second
	s := livetest.SecureCluster(t, cluster.Config{Access: cluster.Access{ReadersPerAccount: -1}, Hardware: cluster.Hardware{Lease: lease}, Durability: cluster.Durability{Store: durable.Memory}}) // the attack at full strength: a consumer a replay
	admin, observer := s.As(t, "admin"), s.As(t, "observer")
	down := make(chan *nats.Msg, 4)
	sub, err := admin.ChanSubscribe("gpusched.evt.node.far-node.down", down)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	heartbeat := "gpusched.evt.node.far-node.heartbeat"
	beats, err := admin.SubscribeSync(heartbeat)
	if err != nil {
		t.Fatal(err)
	}
	hostConn, crash := joinFarNode(t, s, admin, lease)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := jetstream.New(observer)
	if err != nil {
		t.Fatal(err)
	}
	stream := durable.EventStream("gpusched")
	pending := func(subject string) uint64 {
		cons, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{FilterSubject: subject, DeliverPolicy: jetstream.DeliverAllPolicy,
			AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return cons.CachedInfo().NumPending
	}
	beat, err := beats.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no heartbeat of far-node: %v", err)
	}
	planted := "gpusched.evt.gpu.far-node.far-gpu-0.planted"
	if err := hostConn.Publish(planted, beat.Data); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the planted heartbeat in the stream", 5*time.Second, func() bool { return pending(planted) > 0 })
	if n := pending(heartbeat); n != 0 {
		t.Fatalf("the stream holds %d heartbeats of far-node: it keeps no heartbeat", n)
	}
	crash()
	crashed := time.Now()
	replays := 0
	for {
		cons, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{FilterSubject: planted,
			DeliverPolicy: jetstream.DeliverLastPolicy, AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := observer.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+stream+"."+cons.CachedInfo().Name, heartbeat, []byte(`{"batch":1}`)); err != nil {
			t.Fatal(err)
		}
		replays++
		select {
		case <-down:
			// A lease, checked on the scheduler's ticks: well inside 3.
			if took := time.Since(crashed); took > 3*lease {
				t.Fatalf("far-node declared down %s after its crash (lease %s), with %d replays", took, lease, replays)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(crashed) > 5*lease {
			t.Fatalf("far-node was still alive %s after its crash: %d replayed heartbeats kept it so", 5*lease, replays)
		}
	}
}
