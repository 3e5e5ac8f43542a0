package events

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeControl feeds the control decoder every GPU and node actor
// runs on its ctl subject: never a panic, a refusal names a field, an
// accepted control has what its operation needs.
func FuzzDecodeControl(f *testing.F) {
	f.Add([]byte(`{"op":"reserve","job_id":"j1","job":{"name":"a","priority":"high","vram":1,"util":50,"work_s":60,"progress_s":0},"ttl_ms":2000}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, fe := DecodeControl(body)
		if fe != nil {
			if fe.Field == "" || fe.Message == "" {
				t.Fatalf("error %+v names no field, for %q", fe, body)
			}
			return
		}
		switch c.Op {
		case OpReserve, OpCommit, OpAbort:
			if c.JobID == "" {
				t.Fatalf("accepted %s without job_id: %q", c.Op, body)
			}
		case OpChaos:
			if c.Chaos == nil {
				t.Fatalf("accepted chaos without a chaos object: %q", body)
			}
		case OpPreempt, OpRelease, OpKill, OpDescribe:
		default:
			t.Fatalf("accepted unknown op %q", c.Op)
		}
	})
}

// FuzzDecodeEvent feeds the envelope decoder every observer and the
// checker run: never a panic; an accepted event has a gpusched type, a
// source, a seq and an object for data.
func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/gpu/node-0/gpu-1/1","type":"gpusched.gpu.status","time":"2026-01-01T00:00:00Z","simtime":"2026-01-01T00:00:00Z","seq":1,"data":{"gpu":"gpu-1"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, fe := DecodeEvent(body)
		if fe != nil {
			if fe.Field == "" {
				t.Fatalf("error %+v names no field", fe)
			}
			return
		}
		if ev.Source == "" || ev.Seq == 0 || len(ev.Data) == 0 || ev.SpecVersion != "1.0" {
			t.Fatalf("accepted an incomplete event %+v from %q", ev, body)
		}
		if !json.Valid(ev.Data) {
			t.Fatalf("accepted invalid data %q", ev.Data)
		}
	})
}

// FuzzDecodeRequests feeds the strict decoder behind every scheduler
// request (job.get/cancel, job.list, sched.strategy, sched.explain,
// cluster.snapshot, sched.ctl): never a panic, a refusal names a field.
func FuzzDecodeRequests(f *testing.F) {
	f.Add([]byte(`{"job_id":"abc"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, into := range []any{&JobRef{}, &JobListRequest{}, &StrategyRequest{}, &SnapshotRequest{}, &Control{}} {
			if fe := DecodeStrict(body, into); fe != nil && fe.Message == "" {
				t.Fatalf("%T: an error with no message for %q", into, body)
			}
		}
	})
}

// TestHeartbeatNode: the node a heartbeat's subject names, whatever the
// prefix; nothing for another subject.
func TestHeartbeatNode(t *testing.T) {
	for subject, want := range map[string]string{
		NewSubjects("").NodeHeartbeat("node-0"):      "node-0",
		NewSubjects("lab-2").NodeHeartbeat("rack7"):  "rack7",
		NewSubjects("").NodeEvent("node-0", NodeUp):  "",
		NewSubjects("").GPUEvent("n", "g", "status"): "",
	} {
		if got := HeartbeatNode(subject); got != want {
			t.Errorf("HeartbeatNode(%q) = %q, want %q", subject, got, want)
		}
	}
}
