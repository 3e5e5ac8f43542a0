package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/gpu"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/pollux"
	"github.com/gpusched/gpusched/simclock"
	"github.com/gpusched/gpusched/vram"
)

// HostConfig describes the node a Host runs.
type HostConfig struct {
	Spec      model.NodeSpec
	VRAMModel vram.Model
	Clock     simclock.Clock
	Subjects  events.Subjects
	Conn      *nats.Conn
	Logger    *zap.Logger
	// Heartbeat is the heartbeat period (DefaultHeartbeat when zero): wall
	// time on a scaled clock; simulated time on a virtual one, where the
	// node beats periodically only when Lease is set.
	Heartbeat time.Duration
	// Interference is the GPUs' noisy-neighbour coefficient (gpu.Config).
	Interference float64
	// Training is the model the GPUs run training jobs on (gpu.Config).
	Training *pollux.Model
	// Throughputs is the table the GPUs run typed jobs at (gpu.Config).
	Throughputs *model.ThroughputTable
	// Lease is the GPUs' lease (gpu.Config.Lease; zero: none).
	Lease time.Duration
	// FirstIncarnation is the incarnation the node actor and each GPU
	// actor start at (1 when zero): a process restarted on the same store
	// continues the numbering (durable.IncarnationBase), so that no event
	// source repeats.
	FirstIncarnation int
	// RestartBackoff is the first wait before a crashed GPU actor restarts
	// (DefaultRestartBackoff when zero).
	RestartBackoff time.Duration
	// Router, when set, serves the host's control subjects (shared by the
	// hosts of one process); nil: the host subscribes for itself.
	Router *Router
}

// Host runs one node's actors behind its two subscriptions (or a Router's),
// and supervises its GPU actors.
type Host struct {
	cfg  HostConfig
	log  *zap.Logger
	node *Actor
	gpus map[string]*slot
	subs []*nats.Subscription
	wg   sync.WaitGroup
}

// Start subscribes for the node and starts its actors; they run until ctx
// ends, and Wait returns once they have all stopped.
func Start(ctx context.Context, cfg HostConfig) (*Host, error) {
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.RestartBackoff <= 0 {
		cfg.RestartBackoff = DefaultRestartBackoff
	}
	h := &Host{cfg: cfg, log: log.With(zap.String("node", cfg.Spec.ID)), gpus: map[string]*slot{}}
	var slots []*slot
	for _, g := range cfg.Spec.GPUs {
		s := &slot{id: g.ID}
		h.gpus[g.ID] = s
		slots = append(slots, s)
		gc := gpu.Config{ID: g.ID, Node: cfg.Spec.ID, Model: g.Model, VRAMModel: cfg.VRAMModel,
			Clock: cfg.Clock, Subjects: cfg.Subjects, Bus: cfg.Conn, Logger: log, Interference: cfg.Interference, Training: cfg.Training, Throughputs: cfg.Throughputs,
			Variability: g.Variability, Lease: cfg.Lease, Incarnation: max(1, cfg.FirstIncarnation)}
		// The first incarnation exists before the subscription does: a
		// message may wait in its mailbox until it runs, never find it missing.
		s.cur.Store(gpu.New(gc))
	}
	h.node = newActor(cfg.Spec, max(1, cfg.FirstIncarnation), cfg.Clock, cfg.Subjects, cfg.Conn, log, cfg.Heartbeat, slots)
	// On a virtual clock the node beats periodically only for GPUs that
	// hold leases: without one a beat renews nothing (see Run).
	h.node.leased = cfg.Lease > 0

	if cfg.Router != nil {
		cfg.Router.add(ctx, h)
	} else {
		gpuSub, err := cfg.Conn.Subscribe(cfg.Subjects.NodeGPUs(cfg.Spec.ID), func(m *nats.Msg) { h.onGPU(ctx, m) })
		if err != nil {
			return nil, err
		}
		nodeSub, err := cfg.Conn.Subscribe(cfg.Subjects.NodeAll(cfg.Spec.ID), func(m *nats.Msg) { h.onNode(ctx, m) })
		if err != nil {
			gpuSub.Unsubscribe()
			return nil, err
		}
		h.subs = []*nats.Subscription{gpuSub, nodeSub}
		if !simclock.IsVirtual(cfg.Clock) {
			// A scheduler that has just started (a restart, a standby
			// taking over) knows no GPU until a heartbeat names it: each
			// sched.up makes this node beat at once.
			upSub, err := cfg.Conn.Subscribe(cfg.Subjects.SchedEvent(events.SchedUp), func(m *nats.Msg) {
				if ctx.Err() == nil && !events.Redelivered(m) {
					h.Announce()
				}
			})
			if err != nil {
				gpuSub.Unsubscribe()
				nodeSub.Unsubscribe()
				return nil, err
			}
			h.subs = append(h.subs, upSub)
		}
		for _, s := range h.subs {
			// Control traffic must never be dropped as a slow consumer
			// (the mailboxes take everything at once anyway).
			s.SetPendingLimits(-1, -1)
		}
	}
	for _, s := range slots {
		h.wg.Add(1)
		go h.supervise(ctx, s) // no closure: its frame would stay on every GPU's stack
	}
	h.wg.Go(func() { h.node.Run(ctx) })
	// Unsubscribing waits for ctx without a goroutine of its own (one per
	// node adds up at 10,000 nodes).
	h.wg.Add(1)
	context.AfterFunc(ctx, func() {
		defer h.wg.Done()
		for _, s := range h.subs {
			s.Unsubscribe()
		}
		if cfg.Router != nil {
			cfg.Router.remove(cfg.Spec.ID)
		}
	})
	return h, nil
}

// onGPU hands a control message to the GPU actor it names
// (<p>.gpu.<node>.<gpu>.ctl: the GPU id is the second-last token).
func (h *Host) onGPU(ctx context.Context, m *nats.Msg) {
	_, gpu, ok := events.ParseGPUCtl(m.Subject)
	if !ok || events.Redelivered(m) {
		return // (a control replayed from a stream was sent by no one who may)
	}
	h.toGPU(ctx, gpu, "", m)
}

// toGPU hands m to GPU gpu's actor, or answers for it, naming call (a
// batched control's): no such GPU, or its actor is down.
func (h *Host) toGPU(ctx context.Context, gpu, call string, m *nats.Msg) {
	s, ok := h.gpus[gpu]
	if !ok {
		events.Reply(m, events.ControlReply{Error: model.Errorf("gpu", "no GPU %q on node %s", gpu, h.cfg.Spec.ID), Call: call})
		return
	}
	a := s.cur.Load()
	if a == nil {
		// The supervisor answers for a dead actor: a refusal, at once,
		// rather than a timeout.
		left := time.Until(time.Unix(0, s.restartAt.Load())).Round(time.Millisecond)
		events.Reply(m, events.ControlReply{Reason: fmt.Sprintf("GPU actor %s is down (restarting in %s)", s.id, max(0, left)), Down: true,
			Call: call})
		return
	}
	a.Deliver(ctx, m)
}

// onBatch hands each control of a batch (events.ControlBatch, on the
// node's batch subject) to the actor it is for, in order, as if each had
// come on that actor's control subject with the batch's reply subject:
// every answer goes there, naming its control's call. A node speaks for
// its own GPUs only: an item naming another GPU is answered "no GPU".
func (h *Host) onBatch(ctx context.Context, m *nats.Msg) {
	var b events.ControlBatch
	if err := gojson.Unmarshal(m.Data, &b); err != nil || len(b.Items) > events.MaxBatchItems {
		h.log.Warn("bad control batch dropped", zap.String("subject", m.Subject), zap.Int("items", len(b.Items)), zap.Error(err))
		return
	}
	for _, it := range b.Items {
		// Sub: an answer goes out on the connection the batch came on.
		one := &nats.Msg{Data: it.Control, Sub: m.Sub}
		if it.Call != "" {
			one.Reply = m.Reply // a control without a call is not answered
		}
		if it.GPU == "" {
			one.Subject = h.cfg.Subjects.NodeCtl(h.cfg.Spec.ID)
			h.cfg.Clock.Hold() // released by the node actor once handled
			h.node.mailbox.Put(one)
			continue
		}
		one.Subject = h.cfg.Subjects.GPUCtl(h.cfg.Spec.ID, it.GPU)
		h.toGPU(ctx, it.GPU, it.Call, one)
	}
}

// onNode hands a message to the node actor (its mailbox never blocks, so
// a slow node never holds up the others behind a Router).
func (h *Host) onNode(ctx context.Context, m *nats.Msg) {
	if ctx.Err() != nil || events.Redelivered(m) {
		return
	}
	if _, what, _ := events.ParseNodeSubject(m.Subject); what == "batch" {
		h.onBatch(ctx, m)
		return
	}
	h.cfg.Clock.Hold() // released by the node actor once handled
	h.node.mailbox.Put(m)
}

// Router serves the control subjects of every Host of a process through
// two subscriptions in all (<p>.gpu.*.*.ctl and <p>.node.*.*), where each
// Host alone would need two of its own: every subscription of nats.go
// has a goroutine, and 12,500 nodes' 25,000 of them cost 100 MiB.
// Messages for a node no Host here runs are left to whoever runs it.
type Router struct {
	mu    sync.RWMutex
	hosts map[string]routed
	subs  []*nats.Subscription
}

type routed struct {
	ctx context.Context
	h   *Host
}

// NewRouter subscribes on nc for the hosts that will name it in their
// HostConfig; Close unsubscribes.
func NewRouter(nc *nats.Conn, subjects events.Subjects) (*Router, error) {
	r := &Router{hosts: map[string]routed{}}
	// The node a message is for: <p>.gpu.<node>.<gpu>.ctl or
	// <p>.node.<node>.<what>.
	route := func(nodeOf func(subject string) (string, bool), deliver func(routed, *nats.Msg)) nats.MsgHandler {
		return func(m *nats.Msg) {
			node, ok := nodeOf(m.Subject)
			if !ok {
				return
			}
			r.mu.RLock()
			to, ok := r.hosts[node]
			r.mu.RUnlock()
			if ok {
				deliver(to, m)
			}
		}
	}
	gpuNode := func(subject string) (string, bool) { node, _, ok := events.ParseGPUCtl(subject); return node, ok }
	nodeNode := func(subject string) (string, bool) { node, _, ok := events.ParseNodeSubject(subject); return node, ok }
	for _, sub := range []struct {
		subject string
		handler nats.MsgHandler
	}{
		{subjects.AllGPUCtl(), route(gpuNode, func(to routed, m *nats.Msg) { to.h.onGPU(to.ctx, m) })},
		{subjects.AllNodeSubjects(), route(nodeNode, func(to routed, m *nats.Msg) { to.h.onNode(to.ctx, m) })},
	} {
		s, err := nc.Subscribe(sub.subject, sub.handler)
		if err != nil {
			r.Close()
			return nil, err
		}
		// Control traffic must never be dropped as a slow consumer.
		s.SetPendingLimits(-1, -1)
		r.subs = append(r.subs, s)
	}
	return r, nil
}

func (r *Router) add(ctx context.Context, h *Host) {
	r.mu.Lock()
	r.hosts[h.cfg.Spec.ID] = routed{ctx, h}
	r.mu.Unlock()
}

func (r *Router) remove(node string) {
	r.mu.Lock()
	delete(r.hosts, node)
	r.mu.Unlock()
}

// Subscriptions are the router's subscriptions, for a virtual clock to watch.
func (r *Router) Subscriptions() []*nats.Subscription { return r.subs }

// Close unsubscribes.
func (r *Router) Close() {
	for _, s := range r.subs {
		s.Unsubscribe()
	}
}

// Announce makes the node heartbeat now, so that a scheduler that has
// just started learns the node and its GPUs without waiting for the next
// period. On a virtual clock the beat names each GPU's incarnation as its
// supervisor holds it (a node there heartbeats once, at its start, so a
// scheduler restarted later by a kill-scheduler fault learns the node from
// this), and the clock is held until it is out. On a scaled clock every
// GPU is pinged and the beat goes out as a first one does: once all have
// answered, or after firstHeartbeat with those that did.
func (h *Host) Announce() {
	h.cfg.Clock.Hold()
	select {
	case h.node.announce <- struct{}{}:
	default:
		h.cfg.Clock.Release() // one is on its way already
	}
}

// Subscriptions are the host's subscriptions, for a virtual clock to watch.
func (h *Host) Subscriptions() []*nats.Subscription { return h.subs }

// Wait blocks until every actor of the host has stopped.
func (h *Host) Wait() { h.wg.Wait() }
