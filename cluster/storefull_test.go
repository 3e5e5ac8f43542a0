package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
)

// TestAFullStoreRefusesSubmissionsAndTheClusterCarriesOn: when the job
// journal cannot take a write (here: its stream's byte limit, as a full
// disk would), a submission is answered with the store error and its job
// is cancelled without ever running; the scheduler keeps answering; once
// there is room again submissions are accepted and placed.
func TestAFullStoreRefusesSubmissionsAndTheClusterCarriesOn(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Durability: cluster.Durability{Store: durable.Memory}})
	before := submit(t, nc, `{"name":"before","vram":"5GB","duration":"1h"}`)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, "KV_"+durable.JobBucket("gpusched"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	full := info.Config
	full.MaxBytes, full.Discard = int64(info.State.Bytes), jetstream.DiscardNew
	if _, err := js.UpdateStream(ctx, full); err != nil {
		t.Fatal(err)
	}
	rep := req(t, nc, "gpusched.job.submit", `{"name":"refused","vram":"5GB","duration":"1h"}`)
	e, _ := rep["error"].(obj)
	if e == nil || e["field"] != "store" || rep["state"] != "cancelled" {
		t.Fatalf("a submission while the store is full: %v, want an error on store and state cancelled", rep)
	}
	j := getJob(t, nc, rep["job_id"].(string))
	if j["state"] != "cancelled" || strings.Contains(history(j), "placed") || strings.Contains(history(j), "running") {
		t.Fatalf("the refused job: %v, history %s: it must never have run", j["state"], history(j))
	}
	if snap := req(t, nc, "gpusched.cluster.snapshot", `{}`); snap["gpus"] == nil {
		t.Fatalf("the scheduler stopped answering: %v", snap)
	}
	if getJob(t, nc, before)["state"] != "running" {
		t.Fatal("the job accepted before the store filled stopped running")
	}
	// Room again.
	full.MaxBytes = -1
	if _, err := js.UpdateStream(ctx, full); err != nil {
		t.Fatal(err)
	}
	if rep := req(t, nc, "gpusched.job.submit", `{"name":"after","vram":"5GB","duration":"1h"}`); rep["state"] != "placed" {
		t.Fatalf("after the store has room again: %v", rep)
	}
}
