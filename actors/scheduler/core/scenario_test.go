package core

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/vram"
)

// TestScenarios runs the scenario files of testdata/scenarios: the core's
// rules written as data (model: etcd raft's interaction tests), each a
// list of commands on a Harness and, under each, what the core did in
// answer — the controls it sent, the events it emitted, the replies it
// gave — with jobs named by their names. `go test ./actors/scheduler/core
// -run TestScenarios -rewrite` writes the outputs anew after a deliberate
// change; the diff is then the change's effect. The commands:
//
//	harness [policy=binpack] [preempt=fewest-victims] [queue=priority] [starvation-age=10m]
//	gpu node=n1 id=(n1-gpu-0,n1-gpu-1) [model=A100-40GB]
//	submit name=a vram=10GB [gpus=2] [util=20] [priority=high] [preemptible=false] [duration=1h] [checkpoint=10m] [gpu=..] [node=..]
//	cancel name=a
//	pass
//	advance by=11m
//	job name=a                     (its state, GPUs, reason and preemptions)
//	view                           (the core's picture of each GPU: incarnation, alive, VRAM used, jobs)
//	progress gpu=n1-gpu-0 name=a s=660   (what a stop there reports as its progress)
//	refuse id=n1-gpu-1 [reason=..]  / unrefuse id=..
//	silent id=n1-gpu-0             (it answers nothing: its calls time out)
//	timeout                        (the call timeout passes)
//	hold / deliver                 (answers kept back, then delivered)
//	expire gpu=n1-gpu-0 name=a     (the GPU let a reservation lapse before its commit)
//	restart gpu=n1-gpu-0           (the GPU comes back as its next incarnation, empty)
//	stale gpu=n1-gpu-0             (the status of its previous incarnation arrives late)
//	heartbeat node=n1 [unknown=(g1,g2)]  (its heartbeat, naming GPUs the core never heard of too)
//	describe-reply gpu=n2-x0 [about=n1-gpu-0 incarnation=9 planted=name]
//	                               (an answer to the last describe sent to n2-x0: its own
//	                               status, or one about another GPU, with a job planted in it)
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		s := &scenario{}
		datadriven.RunTest(t, path, s.run)
	})
}

// scenario is one scenario file's state.
type scenario struct {
	h *Harness
	// names are the jobs' names by id, ids their ids by name.
	names, ids map[string]string
	// seen counts what the harness had recorded after the last command.
	sent, events int
	// previous is each GPU's status before its last restart.
	previous map[string]events.GPUStatus
	// waiting are the submissions not answered yet, by reply subject.
	waiting map[string]string
}

func (s *scenario) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "harness" && s.h == nil {
		d.Fatalf(t, "the first command must be harness")
	}
	arg := func(key, def string) string {
		if a, ok := d.Arg(key); ok {
			return strings.Join(a.Vals, ",")
		}
		return def
	}
	var out []string
	switch d.Cmd {
	case "harness":
		cfg := Config{Policies: Policies{Policy: arg("policy", "binpack"), Preempt: arg("preempt", ""), Queue: arg("queue", "")}}
		if a := arg("starvation-age", ""); a != "" {
			age, err := time.ParseDuration(a)
			if err != nil {
				d.Fatalf(t, "starvation-age: %v", err)
			}
			cfg.StarvationAge = age
		}
		h, err := NewHarness(cfg, false)
		if err != nil {
			return "error: " + err.Error()
		}
		s.h, s.names, s.ids, s.previous, s.waiting = h, map[string]string{}, map[string]string{}, map[string]events.GPUStatus{}, map[string]string{}
	case "gpu":
		a, ok := d.Arg("id")
		if !ok {
			d.Fatalf(t, "gpu needs id=")
		}
		for _, id := range a.Vals {
			s.h.AddGPU(arg("node", "n1"), id, arg("model", "A100-40GB"))
		}
	case "submit":
		body := map[string]any{"duration": "1h", "util": 20.0}
		for _, a := range d.CmdArgs {
			v := a.Vals[0]
			switch a.Key {
			case "gpus", "util", "cpu", "gpu_milli":
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					d.Fatalf(t, "%s: %v", a.Key, err)
				}
				body[a.Key] = n
			case "preemptible":
				body[a.Key] = v == "true"
			default:
				body[a.Key] = v
			}
		}
		raw := s.h.Request("job.submit", "", body)
		var rep events.SubmitReply
		json.Unmarshal(raw, &rep)
		if rep.JobID != "" {
			s.names[rep.JobID], s.ids[arg("name", "")] = arg("name", ""), rep.JobID
		}
		if len(raw) == 0 {
			s.waiting[s.h.LastReply] = arg("name", "")
		}
		out = append(out, s.effects()...)
		out = append(out, "reply: "+s.reply(raw))
		return s.named(out)
	case "cancel":
		out = append(s.effects(), "reply: "+s.reply(s.h.Request("job.cancel", "", map[string]any{"job_id": s.id(t, d, arg("name", ""))})))
		return s.named(out)
	case "pass":
		s.h.Pass()
	case "advance":
		by, err := time.ParseDuration(arg("by", ""))
		if err != nil {
			d.Fatalf(t, "advance by=: %v", err)
		}
		s.h.Advance(by)
		return "ok"
	case "job":
		in := s.h.JobState(s.id(t, d, arg("name", "")))
		line := in.State
		if len(in.GPUIDs) > 0 {
			line += " on " + strings.Join(in.GPUIDs, ",")
		}
		if in.Preemptions > 0 {
			line += fmt.Sprintf(", %d preemptions", in.Preemptions)
		}
		if in.ProgressS > 0 {
			line += fmt.Sprintf(", progress %.0f s", in.ProgressS)
		}
		if in.Reason != "" {
			line += ": " + in.Reason
		}
		return s.named([]string{line})
	case "view":
		var lines []string
		for _, id := range slices.Sorted(maps.Keys(s.h.Core.view.gpus)) {
			gs := s.h.Core.view.gpus[id]
			line := fmt.Sprintf("%s incarnation %d", id, gs.status.Incarnation)
			if !gs.g.Alive {
				line += ", not alive"
			}
			var jobs []string
			var used int64
			for _, a := range gs.g.Allocs {
				jobs = append(jobs, a.Owner)
				used += a.Size
			}
			line += fmt.Sprintf(", %s used", model.Bytes(used))
			if len(jobs) > 0 {
				line += ": " + strings.Join(jobs, ", ")
			}
			lines = append(lines, line)
		}
		return s.named(lines)
	case "progress":
		g := s.gpu(t, d, arg("gpu", ""))
		p, err := strconv.ParseFloat(arg("s", ""), 64)
		if err != nil {
			d.Fatalf(t, "progress s=: %v", err)
		}
		g.Progress[s.id(t, d, arg("name", ""))] = p
		return "ok"
	case "refuse":
		s.h.Refuse[arg("id", "")] = arg("reason", "insufficient VRAM")
		return "ok"
	case "unrefuse":
		delete(s.h.Refuse, arg("id", ""))
		return "ok"
	case "silent":
		s.h.Unanswered[arg("id", "")] = true
		return "ok"
	case "timeout":
		s.h.Advance(s.h.Core.Timing().CallTimeout)
		s.h.Step(Input{Timer: TimerCalls})
	case "hold":
		s.h.Hold = true
		return "ok"
	case "deliver":
		s.h.Hold = false
		s.h.Deliver()
	case "expire":
		g := s.gpu(t, d, arg("gpu", ""))
		id := s.id(t, d, arg("name", ""))
		g.drop(id)
		st := g.Status
		st.Change, st.JobID = events.ChangeExpired, id
		s.h.GPUEvent(st, events.GPUStatusType)
	case "restart":
		g := s.gpu(t, d, arg("gpu", ""))
		s.previous[g.Status.GPU] = g.Status
		g.Status.Incarnation, g.Status.Jobs, g.Status.Version, g.Status.VRAMUsed = g.Status.Incarnation+1, nil, 0, 0
		g.Status.Change, g.Status.JobID = events.ChangeUp, ""
		s.h.GPUEvent(g.Status, events.GPUUp)
	case "heartbeat":
		var extra []events.HeartbeatGPU
		if a, ok := d.Arg("unknown"); ok {
			for _, id := range a.Vals {
				extra = append(extra, events.HeartbeatGPU{GPU: id, Incarnation: 1, Alive: true})
			}
		}
		s.h.Heartbeat(arg("node", "n1"), extra...)
	case "describe-reply":
		gpu := arg("gpu", "")
		var asked *Sent
		for i, c := range s.h.Sent {
			if _, g, ok := events.ParseGPUCtl(c.Subject); ok && g == gpu && c.Control.Op == events.OpDescribe {
				asked = &s.h.Sent[i]
			}
		}
		if asked == nil {
			d.Fatalf(t, "no describe was sent to %s", gpu)
		}
		node, _, _ := events.ParseGPUCtl(asked.Subject)
		st := events.GPUStatus{GPU: gpu, Node: node, Model: "A100-40GB", Incarnation: 1, VRAMTotal: 40e9, VRAMModel: string(vram.Contiguous)}
		if about := arg("about", ""); about != "" {
			st = s.gpu(t, d, about).Status
		}
		if inc := arg("incarnation", ""); inc != "" {
			n, err := strconv.Atoi(inc)
			if err != nil {
				d.Fatalf(t, "incarnation: %v", err)
			}
			st.Incarnation = n
		}
		if planted := arg("planted", ""); planted != "" {
			st.Jobs = append(st.Jobs, events.GPUJob{JobID: planted, Name: planted, State: events.GPUJobRunning, VRAM: 1 << 30})
		}
		s.h.Step(Input{Msg: &Msg{Subject: asked.Reply, Data: encode(events.ControlReply{OK: true, Status: &st})}})
	case "stale":
		st, ok := s.previous[arg("gpu", "")]
		if !ok {
			d.Fatalf(t, "stale: %s has not restarted", arg("gpu", ""))
		}
		st.Version++
		s.h.GPUEvent(st, events.GPUStatusType)
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	out = s.effects()
	if len(out) == 0 {
		return "nothing"
	}
	return s.named(out)
}

// named joins lines, each job id in them replaced by the job's name.
func (s *scenario) named(lines []string) string {
	text := strings.Join(lines, "\n")
	for id, name := range s.names {
		text = strings.ReplaceAll(text, id, name)
	}
	return text
}

// effects renders what the core did since the last command: a control as
// "→ op job target", an event as "event type job: reason", in order.
func (s *scenario) effects() []string {
	var out []string
	for _, e := range s.h.Events[s.events:] {
		if in, ok := e.Data.(events.JobInfo); ok {
			s.names[in.JobID] = in.Name
		}
	}
	for _, c := range s.h.Sent[s.sent:] {
		target := ""
		if node, gpu, ok := events.ParseGPUCtl(c.Subject); ok {
			target = node + "/" + gpu
		} else if node, _, ok := events.ParseNodeSubject(c.Subject); ok {
			target = node
		}
		line := "→ " + c.Control.Op
		if c.Control.JobID != "" {
			line += " " + s.name(c.Control.JobID)
		}
		out = append(out, line+" @ "+target)
	}
	s.sent = len(s.h.Sent)
	for _, e := range s.h.Events[s.events:] {
		typ := strings.TrimPrefix(e.Type, "gpusched.")
		switch d := e.Data.(type) {
		case events.JobInfo:
			line := "event " + typ + " " + d.Name
			if d.Reason != "" {
				line += ": " + d.Reason
			}
			out = append(out, line)
		case events.Pending:
			out = append(out, "event "+typ+" "+d.Name+": "+d.Reason)
		case *events.Decision:
			line := "event " + typ + " " + s.name(d.JobID) + ": " + d.Node + " " + strings.Join(d.GPUs, ",")
			if len(d.Victims) > 0 {
				line += ", victims " + strings.Join(s.namesOf(d.Victims), ",")
			}
			if len(d.Refusals) > 0 {
				line += ", refused: " + strings.Join(d.Refusals, "; ")
			}
			out = append(out, line)
		default:
			if !strings.HasPrefix(typ, "metrics") {
				out = append(out, "event "+typ)
			}
		}
	}
	s.events = len(s.h.Events)
	for _, subject := range slices.Sorted(maps.Keys(s.waiting)) {
		if raw, ok := s.h.Replies[subject]; ok {
			out = append(out, "reply to "+s.waiting[subject]+": "+s.reply(raw))
			delete(s.waiting, subject)
		}
	}
	return out
}

// reply renders a request's reply: its state, GPUs and reason, or its
// error; "none yet" when it is still to come.
func (s *scenario) reply(raw []byte) string {
	if len(raw) == 0 {
		return "none yet"
	}
	var r struct {
		State  string          `json:"state"`
		GPUs   []string        `json:"gpu_ids"`
		Reason string          `json:"reason"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return string(raw)
	}
	if len(r.Error) > 0 {
		return "error " + string(r.Error)
	}
	line := r.State
	if len(r.GPUs) > 0 {
		line += " on " + strings.Join(r.GPUs, ",")
	}
	if r.Reason != "" {
		line += ": " + r.Reason
	}
	return line
}

func (s *scenario) name(id string) string {
	if n, ok := s.names[id]; ok {
		return n
	}
	return id
}

func (s *scenario) namesOf(ids []string) []string {
	out := slices.Clone(ids)
	for i, id := range out {
		out[i] = s.name(id)
	}
	return out
}

func (s *scenario) id(t *testing.T, d *datadriven.TestData, name string) string {
	id, ok := s.ids[name]
	if !ok {
		d.Fatalf(t, "no job named %q was submitted", name)
	}
	return id
}

func (s *scenario) gpu(t *testing.T, d *datadriven.TestData, id string) *FakeGPU {
	g, ok := s.h.GPUs[id]
	if !ok {
		d.Fatalf(t, "no GPU %q", id)
	}
	return g
}
