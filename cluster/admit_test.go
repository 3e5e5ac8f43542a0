package cluster_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
)

// TestTenantLimitsAdmit: a tenant bounded to 2 GPUs and medium priority
// has a high-priority job refused on priority (never a job), a 3-GPU job
// refused on gpus, and its third 1-GPU job waits, saying why, although
// GPUs are free, until one of its jobs ends; another tenant is not bound.
func TestTenantLimitsAdmit(t *testing.T) {
	limits, err := policy.ParseTenantLimits("team-a=gpus:2,priority:medium")
	if err != nil {
		t.Fatal(err)
	}
	_, nc := startCluster(t, cluster.Config{Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour}, Admission: cluster.Admission{TenantLimits: limits}, Timing: cluster.Timing{Speed: 60}})
	for body, field := range map[string]string{
		`{"name":"boss","tenant":"team-a","priority":"high","vram":"8GB","duration":"1h"}`:             "priority",
		`{"name":"wide","tenant":"team-a","gpus":3,"vram":"8GB","duration":"1h"}`:                      "gpus",
		`{"name":"max","tenant":"team-a","priority":9223372036854775807,"vram":"8GB","duration":"1h"}`: "priority",
	} {
		rep := req(t, nc, "gpusched.job.submit", body)
		if e, _ := rep["error"].(obj); e == nil || e["field"] != field || rep["job_id"] != nil {
			t.Errorf("%s: %v, want an error on %s and no job", body, rep, field)
		}
	}
	a1 := submit(t, nc, `{"name":"a1","tenant":"team-a","vram":"8GB","duration":"100h"}`)
	a2 := submit(t, nc, `{"name":"a2","tenant":"team-a","vram":"8GB","duration":"100h"}`)
	a3 := submit(t, nc, `{"name":"a3","tenant":"team-a","vram":"8GB","duration":"100h"}`)
	b := submit(t, nc, `{"name":"b","tenant":"team-b","priority":"high","gpus":3,"vram":"8GB","duration":"100h"}`)
	waitState(t, nc, a1, "running", 10*time.Second)
	waitState(t, nc, a2, "running", 10*time.Second)
	waitState(t, nc, b, "running", 10*time.Second)
	var j obj
	waitFor(t, "a3 to wait for its tenant's bound", 5*time.Second, func() bool {
		j = getJob(t, nc, a3)
		return j["state"] == "queued" && strings.Contains(j["reason"].(string), "tenant team-a holds 2 of the 2 GPUs")
	})
	req(t, nc, "gpusched.job.cancel", obj{"job_id": a1})
	waitState(t, nc, a3, "running", 10*time.Second)
	if s := getJob(t, nc, a2)["state"]; s != "running" {
		t.Errorf("a2 is %v", s)
	}
}

// TestATenantsQueueIsBounded (issue 42 item 6): a tenant may have at
// most TenantQueue jobs waiting; the next submission is refused on
// tenant, saying so, while another tenant still queues; once one of its
// jobs leaves the queue, the tenant may submit again.
func TestATenantsQueueIsBounded(t *testing.T) {
	shape, err := model.ParseGPUs("1xA100-40GB")
	if err != nil {
		t.Fatal(err)
	}
	_, nc := startCluster(t, cluster.Config{Hardware: cluster.Hardware{Shape: shape}, Scheduling: cluster.Scheduling{StarvationAge: 1000 * time.Hour}, Admission: cluster.Admission{TenantQueue: 2}, Timing: cluster.Timing{Speed: 60}})
	submit(t, nc, `{"name":"big","tenant":"team-b","vram":"40GB","duration":"100h"}`)
	q1 := submit(t, nc, `{"name":"q1","tenant":"team-a","vram":"40GB","duration":"1h"}`)
	submit(t, nc, `{"name":"q2","tenant":"team-a","vram":"40GB","duration":"1h"}`)
	rep := req(t, nc, "gpusched.job.submit", `{"name":"q3","tenant":"team-a","vram":"40GB","duration":"1h"}`)
	if e, _ := rep["error"].(obj); e == nil || e["field"] != "tenant" || !strings.Contains(fmt.Sprint(e["message"]), "2 jobs waiting") {
		t.Fatalf("a third waiting job of team-a: %v, want refused on tenant", rep)
	}
	submit(t, nc, `{"name":"other","tenant":"team-c","vram":"40GB","duration":"1h"}`)
	if rep := req(t, nc, "gpusched.job.cancel", `{"job_id":"`+q1+`"}`); rep["error"] != nil {
		t.Fatalf("cancel q1: %v", rep)
	}
	submit(t, nc, `{"name":"q3","tenant":"team-a","vram":"40GB","duration":"1h"}`)
}
