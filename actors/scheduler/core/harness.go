package core

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/vram"
)

// Harness runs a core without a bus (model: Nomad's scheduler Harness):
// it carries out each step's Ready — records everything the core sends
// and stores — and
// answers the core's calls as a fleet of GPU and node actors would, from
// a layout it keeps per GPU. Tests step the core through it with messages
// and timers and read what it recorded; the clock is Now, moved by hand.
type Harness struct {
	Core *Core
	// Now and Wall are the times of the next step.
	Now, Wall time.Time
	Subjects  events.Subjects
	// MaxPayload, when set, is the largest answer the harness's bus
	// carries (the core's Config.MaxPayload for the next steps).
	MaxPayload int

	// Sent are the messages the core published (reservations, commits,
	// aborts, stops, describes), Replies its answers by reply subject,
	// Events what it emitted, Records what it journaled.
	Sent    []Sent
	Replies map[string][]byte
	// NoResponse are the requests answered "no responders".
	NoResponse []string
	Events     []Emitted
	Records    []*durable.Record

	// GPUs are the harness's GPU actors by id.
	GPUs map[string]*FakeGPU
	// Refuse makes a GPU (or node) refuse every reservation with this
	// reason; Unanswered makes it answer nothing (a timeout).
	Refuse     map[string]string
	Unanswered map[string]bool
	// NodeHolds are what a node's refusal says it holds (Refuse of a node).
	NodeHolds map[string][]events.NodeHold
	// Down makes a GPU's supervisor answer for it: the actor is down
	// (between a crash and its restart).
	Down map[string]bool

	// Hold keeps the answers to reservations back (Deliver sends them):
	// a test sees the placements in flight.
	Hold bool
	// answers are the actors' and the store's answers not delivered yet.
	answers []Input
	// StoreRefuses makes the store refuse a new job's record, saying so;
	// HoldStore keeps the store's answers back until ReleaseStore.
	StoreRefuses string
	HoldStore    bool
	storeAnswers []Input
	// LastReply is the reply subject of the last Request: its answer may
	// come in a later step (Replies[LastReply]).
	LastReply string

	replies int
}

// Sent is a message the core published without waiting.
type Sent struct {
	Subject, Reply string
	Control        events.Control
}

// Emitted is an event the core emitted.
type Emitted struct {
	Subject, Type, ID string
	At                time.Time
	Data              any
}

// answer is an actor's answer to a control.
type answer struct{ Data []byte }

// FakeGPU is a GPU actor as the harness plays it: its layout and jobs.
type FakeGPU struct {
	Status events.GPUStatus
	// Progress is what a stop reports as each job's progress.
	Progress map[string]float64
}

// HarnessEpoch is the simulated and wall time a harness starts at.
var HarnessEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NewHarness makes a core from cfg (its Subjects and Inbox default) with a
// harness to carry out what it asks and, when journal is true, to be its
// job journal.
func NewHarness(cfg Config, journal bool) (*Harness, error) {
	h := &Harness{Now: HarnessEpoch, Wall: HarnessEpoch, Replies: map[string][]byte{}, GPUs: map[string]*FakeGPU{},
		Refuse: map[string]string{}, Unanswered: map[string]bool{}, Down: map[string]bool{}}
	if cfg.Subjects.Prefix == "" {
		cfg.Subjects = events.NewSubjects("")
	}
	if cfg.Inbox == "" {
		cfg.Inbox = "_INBOX.harness."
	}
	if cfg.Now.IsZero() {
		cfg.Now, cfg.Wall = h.Now, h.Wall
	}
	cfg.Journaled = cfg.Journaled || journal
	h.Subjects = cfg.Subjects
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	h.Core = c
	h.carryOut(c.Ready())
	return h, nil
}

// Step steps the core at the harness's time, then (unless Hold) with
// the answers to the reservations it sent.
func (h *Harness) Step(in Input) {
	h.step(in)
	if !h.Hold {
		h.Deliver()
	}
}

// step steps the core at the harness's time and carries out its Ready.
func (h *Harness) step(in Input) {
	in.Now, in.Wall = h.Now, h.Wall
	h.Core.out.maxPayload = h.MaxPayload
	h.carryOut(h.Core.Step(in))
}

// carryOut does what a step asked, in its order: records it, answers
// the calls as the actors would, stores the records.
func (h *Harness) carryOut(rd Ready) {
	for _, e := range rd.Effects {
		switch e.Kind {
		case Send:
			h.publish(e.Subject, e.Reply, e.Body)
		case Emit:
			h.Events = append(h.Events, Emitted{Subject: e.Subject, Type: e.Type, ID: e.ID, At: e.At, Data: e.Data})
		case Answer:
			h.Replies[e.Reply] = e.Body
		case NoResponders:
			h.NoResponse = append(h.NoResponse, e.Reply)
		case Store:
			h.put(e.Record, e.Confirm)
		}
	}
}

// Deliver steps the core with the answers to its reservations, in the
// order they were sent, until none is left.
func (h *Harness) Deliver() {
	for len(h.answers) > 0 {
		in := h.answers[0]
		h.answers = h.answers[1:]
		h.step(in)
	}
}

// Advance moves both clocks on by d.
func (h *Harness) Advance(d time.Duration) {
	h.Now, h.Wall = h.Now.Add(d), h.Wall.Add(d)
}

// Pass runs a scheduling pass.
func (h *Harness) Pass() { h.Step(Input{Timer: TimerPass}) }

// Request steps the core with a request on subject (under the prefix,
// e.g. "job.submit") from tenant ("" any) and returns its answer.
func (h *Harness) Request(subject, tenant string, body any) []byte {
	h.replies++
	reply := "_INBOX.client." + strconv.Itoa(h.replies)
	h.LastReply = reply
	h.Step(Input{Msg: &Msg{Subject: h.Subjects.Prefix + "." + subject, Reply: reply, Data: encode(body), Tenant: tenant}})
	return h.Replies[reply]
}

// Submit submits a job (a submit request's JSON fields) and returns the
// decoded reply.
func (h *Harness) Submit(body map[string]any) events.SubmitReply {
	var r events.SubmitReply
	json.Unmarshal(h.Request("job.submit", "", body), &r)
	return r
}

// AddGPU brings up a GPU of the given model on node (incarnation 1) and
// its node's heartbeat naming every GPU of that node so far.
func (h *Harness) AddGPU(node, id, gpuModel string) *FakeGPU {
	m, err := model.LookupModel(gpuModel)
	if err != nil {
		panic(err)
	}
	g := &FakeGPU{Status: events.GPUStatus{GPU: id, Node: node, Model: m.Name, Incarnation: 1, VRAMModel: string(vram.Contiguous),
		VRAMTotal: int64(m.VRAM), Change: events.ChangeUp}, Progress: map[string]float64{}}
	h.GPUs[id] = g
	h.GPUEvent(g.Status, events.GPUUp)
	h.Heartbeat(node)
	return g
}

// GPUEvent steps the core with a GPU event of type typ carrying st.
func (h *Harness) GPUEvent(st events.GPUStatus, typ string) {
	body := map[string]any{"source": "/gpu/" + st.Node + "/" + st.GPU, "simtime": h.Now, "data": st}
	h.Step(Input{Msg: &Msg{Subject: h.Subjects.GPUEvent(st.Node, st.GPU, typ), Data: encode(body)}})
}

// Heartbeat steps the core with node's heartbeat naming its GPUs alive.
func (h *Harness) Heartbeat(node string, extra ...events.HeartbeatGPU) {
	hb := events.NodeHeartbeat{Node: node, Incarnation: 1, CPUTotal: 64, MemoryTotal: 512 << 30}
	ids := make([]string, 0, len(h.GPUs))
	for id, g := range h.GPUs {
		if g.Status.Node == node {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		g := h.GPUs[id]
		hb.GPUs = append(hb.GPUs, events.HeartbeatGPU{GPU: id, Incarnation: g.Status.Incarnation, Alive: true, Jobs: len(g.Status.Jobs)})
	}
	hb.GPUs = append(hb.GPUs, extra...)
	h.Step(Input{Msg: &Msg{Subject: h.Subjects.NodeHeartbeat(node), Data: encode(map[string]any{"data": hb})}})
}

// publish records a control the core sent and, for a call, queues the
// actor's answer.
func (h *Harness) publish(subject, reply string, data []byte) {
	var c events.Control
	json.Unmarshal(data, &c)
	h.Sent = append(h.Sent, Sent{Subject: subject, Reply: reply, Control: c})
	if reply != "" && (c.Op == events.OpReserve || c.Op == events.OpPreempt || c.Op == events.OpRelease) {
		if a, ok := h.answer(subject, c); ok {
			h.answers = append(h.answers, Input{Msg: &Msg{Subject: reply, Data: a.Data}})
		}
		return
	}
	if node, gpu, ok := events.ParseGPUCtl(subject); ok && reply == "" {
		if g, ok := h.GPUs[gpu]; ok && g.Status.Node == node && c.Op == events.OpAbort {
			g.drop(c.JobID)
		}
	}
}

// put records a journal write; a write to confirm is answered as the
// store would (StoreRefuses: refused), after the step (Deliver).
func (h *Harness) put(rec *durable.Record, confirm bool) {
	r := *rec
	h.Records = append(h.Records, &r)
	if confirm {
		in := Input{Stored: rec.JobID}
		if h.StoreRefuses != "" {
			in = Input{Unstored: &Unstored{JobID: rec.JobID, Why: h.StoreRefuses}}
		}
		if h.HoldStore {
			h.storeAnswers = append(h.storeAnswers, in)
		} else {
			h.answers = append(h.answers, in)
		}
	}
}

// ReleaseStore delivers the store's answers held back (HoldStore), then
// everything else pending.
func (h *Harness) ReleaseStore() {
	h.answers = append(h.answers, h.storeAnswers...)
	h.storeAnswers = nil
	h.Deliver()
}

// answer is how the GPU or node actor subject names answers ctl (false:
// it does not answer).
func (h *Harness) answer(subject string, ctl events.Control) (answer, bool) {
	who := ""
	var g *FakeGPU
	if node, gpu, ok := events.ParseGPUCtl(subject); ok {
		who, g = gpu, h.GPUs[gpu]
		if g != nil && g.Status.Node != node {
			g = nil
		}
	} else if node, _, ok := events.ParseNodeSubject(subject); ok {
		who = node
	}
	if h.Unanswered[who] {
		return answer{}, false
	}
	var rep events.ControlReply
	switch {
	case h.Down[who]:
		rep = events.ControlReply{Reason: "GPU actor " + who + " is down (restarting in 1s)", Down: true}
	case ctl.Op == events.OpReserve && h.Refuse[who] != "":
		rep = events.ControlReply{Reason: h.Refuse[who]}
		if g == nil {
			rep.Holds = h.NodeHolds[who]
		}
	case g == nil:
		rep = events.ControlReply{OK: true} // the node actor
	default:
		rep = g.control(ctl)
	}
	return answer{Data: encode(rep)}, true
}

// control answers a reserve, commit, preempt or release as a GPU actor would.
func (g *FakeGPU) control(c events.Control) events.ControlReply {
	st := &g.Status
	switch c.Op {
	case events.OpReserve:
		a := c.Job
		allocs := make([]vram.Alloc, 0, len(st.Jobs))
		for _, j := range st.Jobs {
			allocs = append(allocs, vram.Alloc{Owner: j.JobID, Offset: j.Offset, Size: j.VRAM})
		}
		off, ok := vram.FirstFit(st.VRAMTotal, vram.Contiguous, allocs, a.VRAM)
		if !ok {
			return events.ControlReply{Reason: "insufficient VRAM"}
		}
		st.Version++
		st.Jobs = append(st.Jobs, events.GPUJob{JobID: c.JobID, Name: a.Name, Priority: a.Priority, State: events.GPUJobReserved, VRAM: a.VRAM,
			Offset: off, Util: a.Util, Milli: a.Milli, ProgressS: a.ProgressS, WorkS: a.WorkS, Rate: 1})
		slices.SortFunc(st.Jobs, func(a, b events.GPUJob) int { return int(a.Offset - b.Offset) })
		st.VRAMUsed += a.VRAM
		return events.ControlReply{OK: true, Offset: off, Version: st.Version, Incarnation: st.Incarnation}
	case events.OpCommit:
		for i := range st.Jobs {
			if st.Jobs[i].JobID == c.JobID {
				st.Jobs[i].State = events.GPUJobRunning
			}
		}
		return events.ControlReply{OK: true}
	case events.OpPreempt, events.OpRelease:
		rep := events.ControlReply{OK: true}
		if g.drop(c.JobID) {
			rep.Stopped = []events.Stopped{{JobID: c.JobID, ProgressS: g.Progress[c.JobID]}}
		} else {
			// A job it no longer runs, as far as it had got when it ended
			// there (its status's memory of ended jobs), as a GPU actor says.
			if e, ended := events.LastEnded(st.Ended, c.JobID); ended {
				rep.Ended = []events.Stopped{{JobID: c.JobID, ProgressS: e.ProgressS}}
			}
		}
		return rep
	}
	return events.ControlReply{OK: true}
}

// drop takes a job off the GPU and reports whether it was there.
func (g *FakeGPU) drop(jobID string) bool {
	st := &g.Status
	for i, j := range st.Jobs {
		if j.JobID == jobID {
			st.VRAMUsed -= j.VRAM
			st.Jobs = slices.Delete(st.Jobs, i, i+1)
			st.Version++
			return true
		}
	}
	return false
}

// Last returns the last event of type typ ("gpusched.job.placed") the
// core emitted about id, or nil.
func (h *Harness) Last(typ, id string) *Emitted {
	for i := len(h.Events) - 1; i >= 0; i-- {
		if e := &h.Events[i]; e.Type == typ && e.ID == id {
			return e
		}
	}
	return nil
}

// JobState is a job's state as job.get answers it ("" for no such job).
func (h *Harness) JobState(id string) events.JobInfo {
	var info events.JobInfo
	json.Unmarshal(h.Request("job.get", "", map[string]string{"job_id": id}), &info)
	return info
}

// Sends are the control messages the core sent without waiting, with op.
func (h *Harness) Sends(op string) []Sent {
	var out []Sent
	for _, s := range h.Sent {
		if s.Control.Op == op {
			out = append(out, s)
		}
	}
	return out
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
