package cluster_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
)

// TestARetriedSubmissionIsOneJob: a submission sent again with the same
// idempotency key — the job_id in its body, or the Nats-Msg-Id header as
// JetStream reads it — gets the first answer, and the cluster has one job.
func TestARetriedSubmissionIsOneJob(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{})
	body := `{"job_id":"client-chosen-1","name":"retried","vram":"5GB","duration":"1h"}`
	first := req(t, nc, "gpusched.job.submit", body)
	second := req(t, nc, "gpusched.job.submit", body)
	if first["job_id"] != "client-chosen-1" || first["state"] != "placed" || second["job_id"] != first["job_id"] || second["state"] != first["state"] {
		t.Fatalf("answers %v and %v, want the same placed job client-chosen-1", first, second)
	}
	withHeader := func() obj {
		m := nats.NewMsg("gpusched.job.submit")
		m.Header.Set(nats.MsgIdHdr, "header-key-1")
		m.Data = []byte(`{"name":"by-header","vram":"5GB","duration":"1h"}`)
		rep, err := nc.RequestMsg(m, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var o obj
		if err := json.Unmarshal(rep.Data, &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	a, b := withHeader(), withHeader()
	if a["job_id"] == nil || a["job_id"] != b["job_id"] {
		t.Fatalf("Nats-Msg-Id: answers %v and %v, want one job", a, b)
	}
	list := req(t, nc, "gpusched.job.list", `{}`)
	if n := list["total"].(float64); n != 2 {
		t.Fatalf("%v jobs listed, want 2 (one per key)", n)
	}
}
