package core

import (
	"encoding/json"
	"testing"

	"github.com/gpusched/gpusched/events"
)

// TestAStepReturnsWhatItAsksInTheOrderItDecided steps a bare core (no
// harness to carry anything out) with a submission on a journaled
// cluster and reads its Ready: the job's events, then its record to
// confirm, then the reservations at the node actor and the GPU, each with
// a reply subject under the core's inbox and said batched when the node's
// heartbeat said so. The record is the job as it was when asked for: the
// placement negotiated later in the same step is not in it.
func TestAStepReturnsWhatItAsksInTheOrderItDecided(t *testing.T) {
	h, err := NewHarness(Config{Policy: "binpack"}, true)
	if err != nil {
		t.Fatal(err)
	}
	h.AddGPU("n1", "n1-gpu-0", "A100-40GB")
	hb := events.NodeHeartbeat{Node: "n1", Incarnation: 1, CPUTotal: 64, MemoryTotal: 512 << 30, BatchCtl: true,
		GPUs: []events.HeartbeatGPU{{GPU: "n1-gpu-0", Incarnation: 1, Alive: true}}}
	h.Step(Input{Msg: &Msg{Subject: h.Subjects.NodeHeartbeat("n1"), Data: encode(map[string]any{"data": hb})}})

	// Stepped by hand: nothing carries this step's Ready out but the test.
	rd := h.Core.Step(Input{Now: h.Now, Wall: h.Wall, Msg: &Msg{Subject: h.Subjects.JobSubmit(), Reply: "_INBOX.client.1",
		Data: encode(spec("a", "8GB"))}})
	var kinds []EffectKind
	var record *Effect
	var sends []Effect
	for i, e := range rd.Effects {
		kinds = append(kinds, e.Kind)
		switch e.Kind {
		case Store:
			record = &rd.Effects[i]
		case Send:
			sends = append(sends, e)
		}
	}
	want := []EffectKind{Emit, Emit, Store, Send, Send}
	if len(kinds) != len(want) {
		t.Fatalf("the step asked %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("the step asked %v, want %v", kinds, want)
		}
	}
	if e := rd.Effects[0]; e.Type != events.Type("job", events.JobSubmitted) {
		t.Errorf("first event %s, want job.submitted", e.Type)
	}
	var info events.JobInfo
	if err := json.Unmarshal(rd.Effects[1].Body, &info); err != nil || info.State != events.JobQueued || info.Name != "a" {
		t.Errorf("the queued event's data %s (%v): want the job queued, encoded when emitted", rd.Effects[1].Body, err)
	}
	if !record.Confirm || record.Record.Placement != "" || record.Record.State != events.JobQueued {
		t.Errorf("the first record: confirm %v, placement %q, state %q; want a queued job to confirm, with no placement yet",
			record.Confirm, record.Record.Placement, record.Record.State)
	}
	for _, s := range sends {
		var c events.Control
		json.Unmarshal(s.Body, &c)
		if c.Op != events.OpReserve || s.Node != "n1" || !s.Batched || len(s.Reply) <= len("_INBOX.harness.") || s.Reply[:len("_INBOX.harness.")] != "_INBOX.harness." {
			t.Errorf("send %+v (op %s): want a reserve at n1, batched, answered under the core's inbox", s, c.Op)
		}
	}
	if sends[0].GPU != "" || sends[1].GPU != "n1-gpu-0" {
		t.Errorf("reservations at %q then %q: want the node actor, then its GPU", sends[0].GPU, sends[1].GPU)
	}
}
