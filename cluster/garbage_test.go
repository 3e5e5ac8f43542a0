package cluster_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/cluster"
)

// garbage is what a careless or hostile client sends: not JSON, the wrong
// JSON type, wrongly typed fields, unknown fields, an empty body, a body
// past the size limit, deep nesting, invalid UTF-8.
var garbage = []string{
	`not json`, `{`, `[]`, `"a string"`, `42`, `null`, ``, `{"job_id":7}`, `{"op":["kill"]}`,
	`{"gpu":{"id":1}}`, `{"page":"two"}`, `{"unknown":true}`, "\xff\xfe\xfd",
	strings.Repeat(`[`, 10000) + strings.Repeat(`]`, 10000),
	`{"name":"` + strings.Repeat("x", 100<<10) + `"}`,
}

// TestGarbageOnEverySubject sends garbage to every documented subject of
// a live cluster. Every request gets an error reply naming a field (or,
// for an actor's internal lease subject and the event subjects, is dropped
// with a logged reason), and nothing crashes: afterwards every actor is
// still its first incarnation, the scheduler too, and a job still runs.
func TestGarbageOnEverySubject(t *testing.T) {
	_, nc := startCluster(t, cluster.Config{Timing: cluster.Timing{Speed: 60}})
	requests := []string{
		"gpusched.job.submit", "gpusched.job.get", "gpusched.job.cancel", "gpusched.job.list",
		"gpusched.sched.strategy", "gpusched.sched.explain", "gpusched.sched.ctl", "gpusched.cluster.snapshot",
		"gpusched.node.node-0.ctl", "gpusched.gpu.node-0.gpu-1.ctl", "gpusched.gpu.node-1.gpu-7.ctl",
		"gpusched.gpu.node-0.gpu-99.ctl",
	}
	for _, a := range []string{"kill", "hang", "partition", "delay", "drop", "kill-scheduler", "nonsense"} {
		requests = append(requests, "gpusched.chaos."+a)
	}
	for _, subject := range requests {
		for _, body := range garbage {
			if subject == "gpusched.cluster.snapshot" || subject == "gpusched.sched.strategy" || subject == "gpusched.job.list" ||
				subject == "gpusched.chaos.kill-scheduler" {
				// An empty or null body is a valid "{}" there (and would kill the scheduler).
				if body == `` || body == `null` {
					continue
				}
			}
			msg, err := nc.Request(subject, []byte(body), 5*time.Second)
			if err != nil {
				t.Fatalf("%s %.40q: no reply (%v): a bad message must get an error reply", subject, body, err)
			}
			var rep struct {
				Error *struct{ Field, Message string } `json:"error"`
			}
			if json.Unmarshal(msg.Data, &rep) != nil || rep.Error == nil || rep.Error.Field == "" {
				t.Fatalf("%s %.40q: reply %.200s, want an error naming a field", subject, body, msg.Data)
			}
		}
	}
	// Published garbage where actors listen to events and leases: dropped.
	for _, subject := range []string{"gpusched.evt.gpu.node-0.gpu-1.status", "gpusched.evt.gpu.node-0.gpu-1.down",
		"gpusched.evt.gpu.node-0.gpu-1.up", "gpusched.evt.node.node-0.heartbeat", "gpusched.node.node-0.lease",
		"gpusched.evt.gpu.node-0.gpu-1.status"} {
		for _, body := range append(garbage,
			// Well-formed JSON that lies: another GPU's status on gpu-1's subject.
			`{"specversion":"1.0","source":"/x","type":"gpusched.gpu.down","seq":1,"data":{"gpu":"gpu-2","node":"node-0","incarnation":9,"vram_total":1}}`,
			`{"specversion":"1.0","source":"/x","type":"gpusched.gpu.status","seq":1,"data":{"gpu":"gpu-1","node":"node-0","incarnation":0}}`) {
			if err := nc.Publish(subject, []byte(body)); err != nil && !strings.Contains(err.Error(), "maximum payload") {
				t.Fatal(err)
			}
		}
	}
	nc.Flush()

	snap := req(t, nc, "gpusched.cluster.snapshot", `{}`)
	sum := snap["summary"].(obj)
	if sum["gpus"].(float64) != 8 || sum["gpus_alive"].(float64) != 8 || sum["scheduler_incarnation"].(float64) != 1 ||
		sum["gpu_deaths"].(float64) != 0 {
		b, _ := json.Marshal(sum)
		t.Fatalf("after the garbage: %s; want 8 GPUs alive, no deaths, the first scheduler", b)
	}
	for _, g := range snap["gpus"].([]any) {
		if inc := g.(obj)["incarnation"].(float64); inc != 1 {
			t.Fatalf("GPU %v is incarnation %v after the garbage: an actor crashed", g.(obj)["gpu"], inc)
		}
	}
	id := submit(t, nc, `{"name":"after-garbage","vram":"8GB","duration":"1m"}`)
	waitState(t, nc, id, "running", 5*time.Second)
}
