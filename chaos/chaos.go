package chaos

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// SchedulerKillNote is what a kill-scheduler reply says about the queue
// when the cluster keeps no job journal (DurableKillNote when it does).
const SchedulerKillNote = "the scheduler restarts and re-learns running jobs from the GPU actors; " +
	"jobs that were only queued are lost (the cluster runs without a job journal: see --data-dir)"

// DurableKillNote is what a kill-scheduler reply says on a durable cluster.
const DurableKillNote = "the scheduler restarts, takes its queue and job records back from the job journal, " +
	"and re-learns running jobs from the GPU actors: nothing accepted is lost"

// MaxDuration bounds a hang or a partition.
const MaxDuration = 24 * time.Hour

// MaxDelay bounds the delay put on a GPU's messages: a delay line is slow
// messages, not a hang (use hang for that).
const MaxDelay = 10 * time.Second

// Responder answers the chaos subjects of one cluster.
type Responder struct {
	nc       *nats.Conn
	subjects events.Subjects
	// nodesOf maps a GPU id to the nodes that have a GPU of that id: the
	// shape's, and those of nodes that joined from other processes (learnt
	// from their heartbeats, hence the lock).
	mu      sync.Mutex
	nodesOf map[string][]string
	// local are the GPU ids of the shape this process runs: theirs is
	// known, and no other node's heartbeat may claim them too.
	local map[string]bool
	// localNodes are the nodes of that shape: their heartbeats teach
	// nothing, and on a virtual clock with leases every node beats every
	// few simulated minutes, so decoding them would be work for nothing.
	localNodes map[string]bool
	log        *zap.Logger
	refusals   *zap.Logger // what a sender can repeat at will, once a minute
	sub        *nats.Subscription
	beats      *nats.Subscription
	emit       *events.Emitter
	clock      interface{ Now() time.Time }
}

// callTimeout bounds the wait for the actor's answer (wall time: the actor
// answers as soon as it reads its mailbox).
const callTimeout = 5 * time.Second

// Serve subscribes to <p>.chaos.* for the GPUs of shape; clock stamps the
// chaos events with simulated time (nil: the wall clock).
func Serve(nc *nats.Conn, subjects events.Subjects, shape model.Shape, clock interface{ Now() time.Time }, log *zap.Logger) (*Responder, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if clock == nil {
		clock = wallClock{}
	}
	r := &Responder{nc: nc, subjects: subjects, nodesOf: map[string][]string{}, local: map[string]bool{}, localNodes: map[string]bool{},
		log: log, refusals: auth.RefusalLog(log), emit: events.NewEmitter(nc, "/chaos/1"), clock: clock}
	for _, n := range shape.Nodes {
		r.localNodes[n.ID] = true
		for _, g := range n.GPUs {
			r.nodesOf[g.ID] = append(r.nodesOf[g.ID], n.ID)
			r.local[g.ID] = true
		}
	}
	sub, err := nc.Subscribe(subjects.AllChaos(), r.on)
	if err != nil {
		return nil, err
	}
	r.sub = sub
	if r.beats, err = nc.Subscribe(subjects.AllNodeEvents(), r.learn); err != nil {
		sub.Unsubscribe()
		return nil, err
	}
	// The server has the subscriptions once a round trip is done: a chaos
	// request sent as soon as the cluster is up finds its responder.
	if err := nc.Flush(); err != nil {
		sub.Unsubscribe()
		r.beats.Unsubscribe()
		return nil, err
	}
	return r, nil
}

// learn adds the GPUs a node heartbeat names (a node of another process).
func (r *Responder) learn(m *nats.Msg) {
	if !strings.HasSuffix(m.Subject, ".heartbeat") || r.localNodes[events.HeartbeatNode(m.Subject)] || events.Redelivered(m) {
		return
	}
	var ev struct {
		Data events.NodeHeartbeat `json:"data"`
	}
	// <p>.evt.node.<node>.heartbeat: a heartbeat speaks for the node its
	// subject names (the one the server's permissions vouch for).
	if json.Unmarshal(m.Data, &ev) != nil || ev.Data.Node == "" || events.HeartbeatNode(m.Subject) != ev.Data.Node {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range ev.Data.GPUs {
		if !events.SpeaksFor(ev.Data.Node, g.GPU) || r.local[g.GPU] {
			continue // another node's GPU by its id, or one this process runs
		}
		if !slices.Contains(r.nodesOf[g.GPU], ev.Data.Node) {
			r.nodesOf[g.GPU] = append(r.nodesOf[g.GPU], ev.Data.Node)
		}
	}
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// Subscriptions are the responder's subscriptions, for a virtual clock to watch.
func (r *Responder) Subscriptions() []*nats.Subscription { return []*nats.Subscription{r.sub, r.beats} }

func fail(m *nats.Msg, field, format string, args ...any) {
	events.Reply(m, events.ErrorReply{Error: model.Errorf(field, format, args...)})
}

func (r *Responder) on(m *nats.Msg) {
	if events.Redelivered(m) {
		r.refusals.Warn("chaos request replayed from a stream ignored (said once a minute)", zap.String("subject", m.Subject))
		return
	}
	if m.Reply != "" && !r.subjects.Answerable(m.Reply) {
		r.refusals.Warn("chaos request whose reply subject is the cluster's own or the server's ignored (said once a minute)",
			zap.String("subject", m.Subject), zap.String("reply", m.Reply))
		return
	}
	action := events.ChaosAction(m.Subject)
	var req events.ChaosRequest
	if fe := events.DecodeStrict(m.Data, &req); fe != nil {
		events.Reply(m, events.ErrorReply{Error: fe})
		return
	}
	if fe := Validate(action, req); fe != nil {
		events.Reply(m, events.ErrorReply{Error: fe})
		return
	}
	if action == events.ChaosKillScheduler {
		r.killScheduler(m, req)
		return
	}
	if action == events.ChaosFailoverScheduler {
		r.failoverScheduler(m, req)
		return
	}
	if action == events.ChaosHangScheduler || action == events.ChaosPartitionScheduler {
		r.faultScheduler(m, action, req)
		return
	}
	node, fe := r.target(req)
	if fe != nil {
		events.Reply(m, events.ErrorReply{Error: fe})
		return
	}
	req.Node = node
	if action == events.ChaosKillAction {
		r.kill(m, req)
		return
	}
	r.fault(m, action, req)
}

// Validate checks a chaos request for action, naming the field at fault.
func Validate(action string, req events.ChaosRequest) *model.FieldError {
	known := false
	for _, a := range events.ChaosActions {
		known = known || a == action
	}
	if !known {
		return model.Errorf("action", "unknown chaos action %q (want one of %s)", action, strings.Join(events.ChaosActions, ", "))
	}
	scheduler := events.SchedulerChaos(action)
	switch {
	case scheduler && (req.GPU != "" || req.Node != ""):
		return model.Errorf("gpu", "%s targets the scheduler: give no gpu or node", action)
	case action == events.ChaosKillScheduler || action == events.ChaosFailoverScheduler:
		if req.Duration != "" || req.Delay != "" || req.Drop != nil {
			return model.Errorf("duration", "%s takes no duration, delay or drop", action)
		}
		return nil
	case !scheduler && req.GPU == "":
		return model.Errorf("gpu", "name the GPU, e.g. {\"gpu\":\"gpu-3\"}")
	}
	d, fe := duration("duration", req.Duration)
	if fe != nil {
		return fe
	}
	switch action {
	case events.ChaosKillAction:
		if req.Duration != "" || req.Delay != "" || req.Drop != nil {
			return model.Errorf("duration", "kill takes no duration, delay or drop")
		}
	case events.ChaosHang, events.ChaosPartition, events.ChaosHangScheduler, events.ChaosPartitionScheduler:
		if req.Duration == "" || d <= 0 {
			example := `{"gpu":"gpu-5","duration":"30s"}`
			if scheduler {
				example = `{"duration":"10s"}`
			}
			return model.Errorf("duration", "%s needs a positive duration, e.g. %s", action, example)
		}
		if d > MaxDuration {
			return model.Errorf("duration", "at most %s", MaxDuration)
		}
		if req.Delay != "" || req.Drop != nil {
			return model.Errorf("delay", "%s takes a duration only", action)
		}
	case events.ChaosDelay:
		if req.Delay == "" {
			return model.Errorf("delay", "delay needs a delay, e.g. {\"gpu\":\"gpu-2\",\"delay\":\"200ms\"} (\"0s\" clears it)")
		}
		d, fe := duration("delay", req.Delay)
		if fe != nil {
			return fe
		}
		if d < 0 || d > MaxDelay {
			// A delay past the GPU's lease wedges it until it is killed.
			return model.Errorf("delay", "from 0s (which clears it) to %s, not %s", MaxDelay, req.Delay)
		}
		if req.Drop != nil {
			return model.Errorf("drop", "delay takes a delay and a duration only")
		}
	case events.ChaosDrop:
		if req.Drop == nil {
			return model.Errorf("drop", "drop needs a fraction, e.g. {\"gpu\":\"gpu-2\",\"drop\":0.2} (0 clears it)")
		}
		if *req.Drop < 0 || *req.Drop > 1 {
			return model.Errorf("drop", "a fraction from 0 to 1, not %g", *req.Drop)
		}
		if req.Delay != "" {
			return model.Errorf("delay", "drop takes a fraction and a duration only")
		}
	}
	return nil
}

func duration(field, s string) (time.Duration, *model.FieldError) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, model.Errorf(field, "a duration such as \"30s\" or \"200ms\", not %q", s)
	}
	if d < 0 {
		return 0, model.Errorf(field, "must not be negative")
	}
	return d, nil
}

// target resolves the GPU's node.
func (r *Responder) target(req events.ChaosRequest) (string, *model.FieldError) {
	r.mu.Lock()
	nodes := slices.Clone(r.nodesOf[req.GPU])
	r.mu.Unlock()
	switch {
	case len(nodes) == 0:
		return "", model.Errorf("gpu", "no GPU %q in this cluster", req.GPU)
	case req.Node == "" && len(nodes) > 1:
		return "", model.Errorf("node", "GPU id %q is on %d nodes: name the node too", req.GPU, len(nodes))
	case req.Node == "":
		return nodes[0], nil
	}
	for _, n := range nodes {
		if n == req.Node {
			return n, nil
		}
	}
	return "", model.Errorf("node", "no GPU %q on node %q", req.GPU, req.Node)
}

// call sends a control to an actor and decodes its answer.
func (r *Responder) call(subject string, c events.Control, into any) *model.FieldError {
	body, _ := json.Marshal(c)
	msg, err := r.nc.Request(subject, body, callTimeout)
	if err != nil {
		return model.Errorf("gpu", "the actor did not answer (is it hung or cut off already?): %v", err)
	}
	var e events.ErrorReply
	if json.Unmarshal(msg.Data, &e) == nil && e.Error != nil {
		return e.Error
	}
	if err := json.Unmarshal(msg.Data, into); err != nil {
		return model.Errorf("gpu", "the actor's answer is not readable: %v", err)
	}
	return nil
}

func (r *Responder) record(action string, ev events.ChaosEvent) {
	ev.Action = action
	if err := r.emit.Emit(r.subjects.ChaosEvent(action), events.Type("chaos", action), ev.GPU, r.clock.Now(), ev); err != nil {
		r.log.Warn("chaos event publish failed", zap.Error(err))
	}
}

func (r *Responder) kill(m *nats.Msg, req events.ChaosRequest) {
	if req.Reason == "" {
		req.Reason = "killed by a chaos command"
	}
	ev := events.ChaosEvent{GPU: req.GPU, Node: req.Node, Reason: req.Reason}
	r.record(events.ChaosKillAction, ev)
	var rep events.ControlReply
	if fe := r.call(r.subjects.GPUCtl(req.Node, req.GPU), events.Control{Op: events.OpKill, Reason: req.Reason}, &rep); fe != nil {
		ev.Failed = fe.Message
		r.record(events.ChaosKillAction, ev)
		events.Reply(m, events.ErrorReply{Error: fe})
		return
	}
	if !rep.OK {
		ev.Failed = rep.Reason
		r.record(events.ChaosKillAction, ev)
		fail(m, "gpu", "the GPU actor refused the kill: %s", rep.Reason)
		return
	}
	out := events.ChaosKillReply{OK: true, GPU: req.GPU, Node: req.Node, LostJobs: []string{}}
	if rep.Status != nil {
		out.Incarnation = rep.Status.Incarnation + 1
	}
	for _, st := range rep.Stopped {
		out.LostJobs = append(out.LostJobs, st.JobID)
	}
	r.log.Warn("chaos: GPU killed", zap.String("gpu", req.GPU), zap.String("node", req.Node), zap.Strings("lost_jobs", out.LostJobs))
	events.Reply(m, out)
}

func (r *Responder) fault(m *nats.Msg, action string, req events.ChaosRequest) {
	d, _ := duration("duration", req.Duration)
	delay, _ := duration("delay", req.Delay)
	cc := &events.ChaosControl{Action: action, DurationMS: d.Milliseconds(), DelayMS: delay.Milliseconds(), Seed: req.Seed}
	if req.Drop != nil {
		cc.Drop = *req.Drop
	}
	ev := events.ChaosEvent{GPU: req.GPU, Node: req.Node, Duration: req.Duration, Delay: req.Delay, Drop: cc.Drop, Reason: req.Reason}
	r.record(action, ev)
	var rep events.ControlReply
	if fe := r.call(r.subjects.GPUCtl(req.Node, req.GPU), events.Control{Op: events.OpChaos, Chaos: cc}, &rep); fe != nil {
		ev.Failed = fe.Message
		r.record(action, ev)
		events.Reply(m, events.ErrorReply{Error: fe})
		return
	}
	if !rep.OK {
		ev.Failed = rep.Reason
		r.record(action, ev)
		fail(m, "gpu", "the GPU actor refused: %s", rep.Reason)
		return
	}
	out := events.ChaosReply{OK: true, Action: action, GPU: req.GPU, Node: req.Node, Duration: req.Duration, Delay: req.Delay, Drop: cc.Drop}
	if rep.Status != nil {
		out.Incarnation = rep.Status.Incarnation
	}
	r.log.Warn("chaos", zap.String("action", action), zap.String("gpu", req.GPU), zap.String("node", req.Node),
		zap.String("duration", req.Duration), zap.String("delay", req.Delay), zap.Float64("drop", cc.Drop))
	events.Reply(m, out)
}

// schedulerNotes say what a hang or a partition of the scheduler does.
var schedulerNotes = map[string]string{
	events.ChaosHangScheduler: "the scheduler reads and answers nothing until then: requests wait out their deadlines, " +
		"and GPUs whose leases lapse meanwhile stop their jobs, which are re-queued",
	events.ChaosPartitionScheduler: "nothing reaches the scheduler until then and what it sends waits: requests wait out their deadlines, " +
		"it declares the GPUs it no longer hears from dead (they stop their jobs first) and re-queues their jobs",
}

// askScheduler records action's event, sends c to the scheduler and
// returns its answer. When the scheduler refuses or does not answer it
// records that too (ChaosEvent.Failed), answers m with the error (a failed
// call named on "scheduler") and returns false.
func (r *Responder) askScheduler(m *nats.Msg, action string, ev events.ChaosEvent, c events.Control) (events.SchedLifecycle, bool) {
	r.record(action, ev)
	var rep events.SchedLifecycle
	fe := r.call(r.subjects.SchedCtl(), c, &rep)
	if fe == nil {
		return rep, true
	}
	if fe.Field == "gpu" || fe.Field == "" {
		fe.Field = "scheduler"
	}
	ev.Failed = fe.Message
	r.record(action, ev)
	events.Reply(m, events.ErrorReply{Error: fe})
	return rep, false
}

// faultScheduler hangs the scheduler or cuts it off from the bus for the
// request's duration (on either clock; a refusal of the scheduler's is the
// reply).
func (r *Responder) faultScheduler(m *nats.Msg, action string, req events.ChaosRequest) {
	if req.Reason == "" {
		req.Reason = "by a chaos command"
	}
	d, _ := duration("duration", req.Duration)
	op := events.ChaosHang
	if action == events.ChaosPartitionScheduler {
		op = events.ChaosPartition
	}
	rep, ok := r.askScheduler(m, action, events.ChaosEvent{Reason: req.Reason, Duration: req.Duration},
		events.Control{Op: events.OpChaos, Reason: req.Reason, Chaos: &events.ChaosControl{Action: op, DurationMS: d.Milliseconds()}})
	if !ok {
		return
	}
	r.log.Warn("chaos: scheduler "+op, zap.Duration("for", d))
	events.Reply(m, events.ChaosReply{OK: true, Action: action, Incarnation: rep.Incarnation, Duration: req.Duration, Note: schedulerNotes[action]})
}

// FailoverNote is what a failover-scheduler reply says.
const FailoverNote = "the scheduler is cut off from the bus for good and stops placing half a lease from now; " +
	"a standby takes the control plane over from the job journal three quarters of a lease from now, " +
	"re-learning the running jobs from the GPUs; nothing the cut-off one kept is sent"

// failoverScheduler asks the scheduler to fail over to a standby; its
// reply's incarnation is the standby's.
func (r *Responder) failoverScheduler(m *nats.Msg, req events.ChaosRequest) {
	if req.Reason == "" {
		req.Reason = "failed over by a chaos command"
	}
	rep, ok := r.askScheduler(m, events.ChaosFailoverScheduler, events.ChaosEvent{Reason: req.Reason},
		events.Control{Op: events.OpChaos, Reason: req.Reason, Chaos: &events.ChaosControl{Action: events.ChaosFailoverScheduler}})
	if !ok {
		return
	}
	r.log.Warn("chaos: scheduler failing over to a standby", zap.String("reason", rep.Reason))
	events.Reply(m, events.ChaosReply{OK: true, Action: events.ChaosFailoverScheduler, Incarnation: rep.Incarnation + 1, Note: FailoverNote})
}

func (r *Responder) killScheduler(m *nats.Msg, req events.ChaosRequest) {
	if req.Reason == "" {
		req.Reason = "killed by a chaos command"
	}
	rep, ok := r.askScheduler(m, events.ChaosKillScheduler, events.ChaosEvent{Reason: req.Reason},
		events.Control{Op: events.OpKill, Reason: req.Reason})
	if !ok {
		return
	}
	out := events.ChaosReply{OK: true, Action: events.ChaosKillScheduler, Incarnation: rep.Incarnation + 1, QueuedLost: rep.Queued,
		Running: rep.Running, Note: SchedulerKillNote}
	if rep.Durable {
		out.QueuedLost, out.Queued, out.Note = 0, rep.Queued, DurableKillNote
	}
	r.log.Warn("chaos: scheduler killed", zap.Int("queued_lost", out.QueuedLost), zap.Int("queued", rep.Queued), zap.Int("running", rep.Running))
	events.Reply(m, out)
}
