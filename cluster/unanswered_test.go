package cluster_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
)

// TestASubmissionAKilledSchedulerNeverAnsweredIsAnswered: the scheduler
// is killed while a submission waits for its placement's answers (its
// GPU's messages are delayed 3 s). Its client, waiting with no deadline
// that matters, hears from the successor: without a journal "no
// responders" (the job was never accepted: send it again), with one the
// job as the journal kept it. Before, it heard nothing, ever.
func TestASubmissionAKilledSchedulerNeverAnsweredIsAnswered(t *testing.T) {
	for _, store := range []durable.Storage{durable.None, durable.Memory} {
		t.Run("store="+store.String(), func(t *testing.T) {
			_, nc := startCluster(t, cluster.Config{Hardware: cluster.Hardware{RestartBackoff: 200 * time.Millisecond}, Durability: cluster.Durability{Store: store}})
			req(t, nc, "gpusched.chaos.delay", `{"gpu":"gpu-3","delay":"3s"}`)
			submitted := make(chan *nats.Msg, 4)
			sub, err := nc.ChanSubscribe("gpusched.evt.job.submitted", submitted)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			answer := make(chan *nats.Msg, 1)
			failed := make(chan error, 1)
			go func() {
				m, err := nc.Request("gpusched.job.submit", []byte(`{"name":"unlucky","vram":"1GB","duration":"1h","gpu":"gpu-3"}`), 20*time.Second)
				if err != nil {
					failed <- err
					return
				}
				answer <- m
			}()
			var id string
			select {
			case m := <-submitted:
				var ev struct {
					Data struct {
						JobID string `json:"job_id"`
					} `json:"data"`
				}
				json.Unmarshal(m.Data, &ev)
				id = ev.Data.JobID
			case <-time.After(5 * time.Second):
				t.Fatal("the submission was not taken")
			}
			if rep := req(t, nc, "gpusched.chaos.kill-scheduler", `{}`); rep["ok"] != true {
				t.Fatalf("kill-scheduler: %v", rep)
			}
			select {
			case err := <-failed:
				if store != durable.None || !errors.Is(err, nats.ErrNoResponders) {
					t.Fatalf("the client heard %v", err)
				}
			case m := <-answer:
				var rep struct {
					JobID string `json:"job_id"`
					State string `json:"state"`
				}
				if json.Unmarshal(m.Data, &rep); store == durable.None || rep.JobID != id || rep.State == "" {
					t.Fatalf("the client heard %s; want job %s (no responders without a journal)", m.Data, id)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the client heard nothing")
			}
		})
	}
}
