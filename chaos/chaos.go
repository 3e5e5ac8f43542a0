package chaos

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// KillRequest is the body of <p>.chaos.kill: the GPU to crash, and its node
// where GPU ids repeat across nodes.
type KillRequest struct {
	GPU    string `json:"gpu"`
	Node   string `json:"node,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// KillReply answers a kill: the GPU's new incarnation and the jobs it lost.
type KillReply struct {
	OK          bool     `json:"ok"`
	GPU         string   `json:"gpu"`
	Node        string   `json:"node"`
	Incarnation int      `json:"incarnation"`
	LostJobs    []string `json:"lost_jobs"`
}

// Responder answers the chaos subjects of one cluster.
type Responder struct {
	nc       *nats.Conn
	subjects events.Subjects
	// nodesOf maps a GPU id to the nodes that have a GPU of that id.
	nodesOf map[string][]string
	log     *zap.Logger
	sub     *nats.Subscription
}

// callTimeout bounds the wait for the GPU actor's answer (wall time: the
// actor answers as soon as it reads its mailbox).
const callTimeout = 5 * time.Second

// Serve subscribes to <p>.chaos.kill for the GPUs of shape.
func Serve(nc *nats.Conn, subjects events.Subjects, shape model.Shape, log *zap.Logger) (*Responder, error) {
	if log == nil {
		log = zap.NewNop()
	}
	r := &Responder{nc: nc, subjects: subjects, nodesOf: map[string][]string{}, log: log}
	for _, n := range shape.Nodes {
		for _, g := range n.GPUs {
			r.nodesOf[g.ID] = append(r.nodesOf[g.ID], n.ID)
		}
	}
	sub, err := nc.Subscribe(subjects.ChaosKill(), r.onKill)
	if err != nil {
		return nil, err
	}
	r.sub = sub
	return r, nil
}

// Subscriptions are the responder's subscriptions, for a virtual clock to watch.
func (r *Responder) Subscriptions() []*nats.Subscription { return []*nats.Subscription{r.sub} }

func (r *Responder) onKill(m *nats.Msg) {
	var req KillRequest
	if fe := events.DecodeStrict(m.Data, &req); fe != nil {
		events.Reply(m, events.ErrorReply{Error: fe})
		return
	}
	fail := func(field, format string, args ...any) {
		events.Reply(m, events.ErrorReply{Error: model.Errorf(field, format, args...)})
	}
	if req.GPU == "" {
		fail("gpu", "name the GPU to kill, e.g. {\"gpu\":\"gpu-3\"}")
		return
	}
	nodes := r.nodesOf[req.GPU]
	switch {
	case len(nodes) == 0:
		fail("gpu", "no GPU %q in this cluster", req.GPU)
		return
	case req.Node == "" && len(nodes) > 1:
		fail("node", "GPU id %q is on %d nodes: name the node too", req.GPU, len(nodes))
		return
	case req.Node == "":
		req.Node = nodes[0]
	}
	found := false
	for _, n := range nodes {
		found = found || n == req.Node
	}
	if !found {
		fail("node", "no GPU %q on node %q", req.GPU, req.Node)
		return
	}
	if req.Reason == "" {
		req.Reason = "killed by a chaos command"
	}
	body, _ := json.Marshal(events.Control{Op: events.OpKill, Reason: req.Reason})
	msg, err := r.nc.Request(r.subjects.GPUCtl(req.Node, req.GPU), body, callTimeout)
	if err != nil {
		fail("gpu", "the GPU actor did not answer: %v", err)
		return
	}
	var rep events.ControlReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil || rep.Error != nil || !rep.OK {
		fail("gpu", "the GPU actor refused the kill: %s", msg.Data)
		return
	}
	out := KillReply{OK: true, GPU: req.GPU, Node: req.Node, LostJobs: []string{}}
	if rep.Status != nil {
		out.Incarnation = rep.Status.Incarnation + 1
	}
	for _, st := range rep.Stopped {
		out.LostJobs = append(out.LostJobs, st.JobID)
	}
	r.log.Warn("chaos: GPU killed", zap.String("gpu", req.GPU), zap.String("node", req.Node), zap.Strings("lost_jobs", out.LostJobs))
	events.Reply(m, out)
}
