package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/internal/livetest"
)

// TestPayloadLimitsPerRole (issue 22 item 6: 8 MB bodies on a node's own
// event subject evicted 83,728 stored events in 7 s): a tenant may publish
// nothing larger than a request, nor may an observer or an admin (each in
// an account of its own); an event larger than any the cluster
// publishes is not kept in the history, whoever sends it.
func TestPayloadLimitsPerRole(t *testing.T) {
	s := livetest.SecureCluster(t, cluster.Config{Durability: cluster.Durability{Store: durable.Memory}})
	alice, node0, admin := s.As(t, "alice"), s.As(t, "node-0"), s.As(t, "admin")
	for name, nc := range map[string]*nats.Conn{"a tenant's": alice, "an admin's": admin, "an observer's": s.As(t, "observer")} {
		if got := nc.MaxPayload(); got != auth.TenantMaxPayload {
			t.Fatalf("%s connection may publish %d bytes, want %d", name, got, auth.TenantMaxPayload)
		}
	}
	if _, err := alice.Request("gpusched.job.submit", make([]byte, 100<<10), time.Second); !errors.Is(err, nats.ErrMaxPayload) {
		t.Fatalf("a tenant's 100 KiB request: %v, want refused for its size", err)
	}
	big := `{"data":{"node":"node-0","pad":"` + strings.Repeat("x", 2<<20) + `"}}`
	subject := "gpusched.evt.gpu.node-0.node-0-gpu-0.status" // a subject the stream keeps (not a heartbeat)
	if err := node0.Publish(subject, []byte(big)); err != nil {
		t.Fatalf("the node's publish: %v", err)
	}
	if err := node0.Flush(); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, durable.EventStream("gpusched"))
	if err != nil {
		t.Fatal(err)
	}
	// The event went through the server (flushed); had the stream kept
	// it, it would hold more than 2 MiB.
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxMsgSize != durable.MaxEventBytes || info.State.Bytes > 1<<20 {
		t.Fatalf("stream max message size %d, %d bytes kept", info.Config.MaxMsgSize, info.State.Bytes)
	}
}
