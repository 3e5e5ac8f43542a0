package core

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/tracedir"
	"github.com/gpusched/gpusched/pollux"
)

// TestAStepReturnsWhatItAsksInTheOrderItDecided steps a bare core (no
// harness to carry anything out) with a submission on a journaled
// cluster and reads its Ready: the job's record to confirm, then the
// reservations at the node actor and the GPU, each with a reply subject
// under the core's inbox and said batched when the node's heartbeat said
// so. The record is the job as it was when asked for: the placement
// negotiated later in the same step is not in it. The job's events wait
// for the store: the step that hears it stored announces them.
func TestAStepReturnsWhatItAsksInTheOrderItDecided(t *testing.T) {
	h := journaledWithABatchingNode(t)
	// Stepped by hand: nothing carries these steps' Readys out but the test.
	rd := h.Core.Step(Input{Now: h.Now, Wall: h.Wall, Msg: &Msg{Subject: h.Subjects.JobSubmit(), Reply: "_INBOX.client.1",
		Data: encode(spec("a", "8GB"))}})
	if got, want := kindsOf(rd), []EffectKind{Store, Send, Send}; !slices.Equal(got, want) {
		t.Fatalf("the submission's step asked %v, want %v", got, want)
	}
	record, sends := rd.Effects[0], rd.Effects[1:]
	if !record.Confirm || record.Record.Placement != "" || record.Record.State != events.JobQueued {
		t.Errorf("the first record: confirm %v, placement %q, state %q; want a queued job to confirm, with no placement yet",
			record.Confirm, record.Record.Placement, record.Record.State)
	}
	for _, s := range sends {
		var c events.Control
		json.Unmarshal(s.Body, &c)
		if c.Op != events.OpReserve || s.Node != "n1" || !s.Batched || !strings.HasPrefix(s.Reply, "_INBOX.harness.") {
			t.Errorf("send %+v (op %s): want a reserve at n1, batched, answered under the core's inbox", s, c.Op)
		}
	}
	if sends[0].GPU != "" || sends[1].GPU != "n1-gpu-0" {
		t.Errorf("reservations at %q then %q: want the node actor, then its GPU", sends[0].GPU, sends[1].GPU)
	}
	id := record.Record.JobID

	rd = h.Core.Step(Input{Now: h.Now, Wall: h.Wall, Stored: id})
	if got := kindsOf(rd); len(got) < 2 || got[0] != Emit || got[1] != Emit {
		t.Fatalf("the step that hears the record stored asked %v, want the job's two events first", got)
	}
	if e := rd.Effects[0]; e.Type != events.Type("job", events.JobSubmitted) || e.ID != id {
		t.Errorf("first event %s about %s, want job.submitted about %s", e.Type, e.ID, id)
	}
	var info events.JobInfo
	if err := json.Unmarshal(rd.Effects[1].Body, &info); err != nil || info.State != events.JobQueued || info.Name != "a" {
		t.Errorf("the queued event's data %s (%v): want the job queued, encoded when emitted", rd.Effects[1].Body, err)
	}
}

// TestAJobTheStoreRefusesIsNeverAnnounced: a submission whose first
// record the store refuses is answered with the store's error and no
// event ever names it — not submitted, not queued, not cancelled — since
// a job exists only once stored.
func TestAJobTheStoreRefusesIsNeverAnnounced(t *testing.T) {
	h := journaledWithABatchingNode(t)
	h.StoreRefuses = "no space left on device"
	before := len(h.Events)
	rep := h.Submit(spec("a", "8GB"))
	if rep.State != events.JobCancelled {
		t.Fatalf("answered %+v, want cancelled", rep)
	}
	for _, e := range h.Events[before:] {
		if e.ID == rep.JobID {
			t.Errorf("event %s names the job the store refused", e.Type)
		}
	}
	if got := h.Submit(spec("b", "8GB")); got.State != events.JobCancelled {
		t.Fatalf("the next submission answered %+v, want cancelled too (the store still refuses)", got)
	}
	h.StoreRefuses = ""
	ok := h.Submit(spec("c", "8GB"))
	var names []string
	for _, e := range h.Events[before:] {
		if e.ID == ok.JobID {
			names = append(names, e.Type)
		}
	}
	if ok.State != events.JobPlaced || len(names) == 0 || names[0] != events.Type("job", events.JobSubmitted) {
		t.Errorf("a stored job: answered %+v, events %v; want placed, announced from job.submitted", ok, names)
	}
}

// journaledWithABatchingNode is a harness whose core journals its jobs,
// with one A100 on n1, whose heartbeat says it takes controls batched.
func journaledWithABatchingNode(t *testing.T) *Harness {
	t.Helper()
	h, err := NewHarness(Config{Policies: Policies{Policy: "binpack"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	h.AddGPU("n1", "n1-gpu-0", "A100-40GB")
	hb := events.NodeHeartbeat{Node: "n1", Incarnation: 1, CPUTotal: 64, MemoryTotal: 512 << 30, BatchCtl: true,
		GPUs: []events.HeartbeatGPU{{GPU: "n1-gpu-0", Incarnation: 1, Alive: true}}}
	h.Step(Input{Msg: &Msg{Subject: h.Subjects.NodeHeartbeat("n1"), Data: encode(map[string]any{"data": hb})}})
	return h
}

// kindsOf is what a Ready asks, in order.
func kindsOf(rd Ready) []EffectKind {
	kinds := make([]EffectKind, len(rd.Effects))
	for i, e := range rd.Effects {
		kinds[i] = e.Kind
	}
	return kinds
}

// TestAJobThatWaitsForRoundsIsAnsweredOnceStored: on a journaled core a
// training job's submission, like any other, is answered only once its
// first record is stored, and its events wait for that too; one the store
// refuses is answered with the store's error and named by no event, and
// the next round does not train it.
func TestAJobThatWaitsForRoundsIsAnsweredOnceStored(t *testing.T) {
	m, err := pollux.Load(tracedir.Pollux(t))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := pollux.NewPolicy("tiresias")
	h, err := NewHarness(Config{Policies: Policies{Policy: "binpack"}, Workloads: Workloads{Training: &TrainingConfig{Model: m, Policy: p, Interval: time.Minute, Origin: HarnessEpoch}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	h.AddGPU("n1", "n1-gpu-0", "A100-40GB")
	body := map[string]any{"name": "ncf", "training": map[string]any{"app": "ncf", "batch": 32768, "replicas": 1}}

	h.HoldStore = true
	before := len(h.Events)
	if got := h.Request("job.submit", "", body); got != nil {
		t.Fatalf("answered %s before the store did", got)
	}
	held := h.LastReply
	if n := len(h.Events) - before; n != 0 {
		t.Fatalf("%d events before the store answered, e.g. %s", n, h.Events[before].Type)
	}
	h.ReleaseStore()
	var rep events.SubmitReply
	if err := json.Unmarshal(h.Replies[held], &rep); err != nil || rep.State != events.JobQueued {
		t.Fatalf("once stored, answered %s (%v); want queued", h.Replies[held], err)
	}
	var names []string
	for _, e := range h.Events[before:] {
		if e.ID == rep.JobID {
			names = append(names, e.Type)
		}
	}
	if len(names) < 2 || names[0] != events.Type("job", events.JobSubmitted) || names[1] != events.Type("job", events.JobQueued) {
		t.Fatalf("once stored, its events %v; want submitted and queued first", names)
	}

	h.HoldStore = false
	h.StoreRefuses = "no space left on device"
	before = len(h.Events)
	got := h.Request("job.submit", "", body)
	var refused events.SubmitAnswer
	if err := json.Unmarshal(got, &refused); err != nil || refused.Error == nil || refused.Error.Field != "store" {
		t.Fatalf("a training job the store refused: answered %s; want an error naming store", got)
	}
	h.StoreRefuses = ""
	for range 2 { // rounds go by
		h.Advance(time.Minute)
		h.Step(Input{Timer: TimerTraining})
	}
	for _, e := range h.Events[before:] {
		if e.ID == refused.JobID {
			t.Errorf("event %s names the training job the store refused", e.Type)
		}
	}
}
