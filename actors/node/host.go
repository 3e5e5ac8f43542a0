package node

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/gpu"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
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
	// Heartbeat is the wall-time heartbeat period (DefaultHeartbeat when zero).
	Heartbeat time.Duration
	// Interference is the GPUs' noisy-neighbour coefficient (gpu.Config).
	Interference float64
	// Lease is the GPUs' lease (gpu.Config.Lease; zero: none).
	Lease time.Duration
	// RestartBackoff is the first wait before a crashed GPU actor restarts
	// (DefaultRestartBackoff when zero).
	RestartBackoff time.Duration
}

// Host runs one node's actors behind its two subscriptions, and
// supervises its GPU actors.
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
	var configs []gpu.Config
	for _, g := range cfg.Spec.GPUs {
		s := &slot{id: g.ID}
		h.gpus[g.ID] = s
		slots = append(slots, s)
		gc := gpu.Config{ID: g.ID, Node: cfg.Spec.ID, Model: g.Model, VRAMModel: cfg.VRAMModel,
			Clock: cfg.Clock, Subjects: cfg.Subjects, Bus: cfg.Conn, Logger: log, Interference: cfg.Interference,
			Lease: cfg.Lease}
		configs = append(configs, gc)
		// The first incarnation exists before the subscription does: a
		// message may wait in its mailbox until it runs, never find it missing.
		s.cur.Store(gpu.New(gc))
	}
	h.node = newActor(cfg.Spec, 1, cfg.Clock, cfg.Subjects, cfg.Conn, log, cfg.Heartbeat, slots)

	// The GPU subject is <p>.gpu.<node>.<gpu>.ctl: the GPU id is the second-last token.
	gpuSub, err := cfg.Conn.Subscribe(cfg.Subjects.NodeGPUs(cfg.Spec.ID), func(m *nats.Msg) {
		tokens := strings.Split(m.Subject, ".")
		if len(tokens) < 2 || tokens[len(tokens)-1] != "ctl" {
			return
		}
		s, ok := h.gpus[tokens[len(tokens)-2]]
		if !ok {
			events.Reply(m, events.ControlReply{Error: model.Errorf("gpu", "no GPU %q on node %s", tokens[len(tokens)-2], cfg.Spec.ID)})
			return
		}
		a := s.cur.Load()
		if a == nil {
			// The supervisor answers for a dead actor: a refusal, at once,
			// rather than a timeout.
			left := time.Until(time.Unix(0, s.restartAt.Load())).Round(time.Millisecond)
			events.Reply(m, events.ControlReply{Reason: fmt.Sprintf("GPU actor %s is down (restarting in %s)", s.id, max(0, left))})
			return
		}
		a.Deliver(ctx, m)
	})
	if err != nil {
		return nil, err
	}
	nodeSub, err := cfg.Conn.Subscribe(cfg.Subjects.NodeAll(cfg.Spec.ID), func(m *nats.Msg) {
		cfg.Clock.Hold() // released by the node actor once handled
		select {
		case h.node.mailbox <- m:
		case <-ctx.Done():
			cfg.Clock.Release()
		}
	})
	if err != nil {
		gpuSub.Unsubscribe()
		return nil, err
	}
	h.subs = []*nats.Subscription{gpuSub, nodeSub}
	for _, s := range h.subs {
		// Control traffic must never be dropped as a slow consumer: the
		// mailboxes apply back-pressure instead.
		s.SetPendingLimits(-1, -1)
	}
	for i, s := range slots {
		h.wg.Go(func() { h.supervise(ctx, s, configs[i]) })
	}
	h.wg.Go(func() { h.node.Run(ctx) })
	h.wg.Go(func() {
		<-ctx.Done()
		for _, s := range h.subs {
			s.Unsubscribe()
		}
	})
	return h, nil
}

// Subscriptions are the host's subscriptions, for a virtual clock to watch.
func (h *Host) Subscriptions() []*nats.Subscription { return h.subs }

// Wait blocks until every actor of the host has stopped.
func (h *Host) Wait() { h.wg.Wait() }
