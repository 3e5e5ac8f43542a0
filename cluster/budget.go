package cluster

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/events"
)

// budgetKeeper holds every node of the roles file to its event budget
// (issue 22 item 6). Nothing in NATS bounds what one publisher sends, and
// the event stream is shared, so a node flooding its own event subjects
// evicts everyone's history. The keeper counts each node's event bytes as
// they pass (a node's credentials publish only its own subjects, so the
// subject names the sender) and, when a node passes its budget, reloads
// the embedded server without that node's users: its connections are
// closed and its credentials refused for the cool-off, then readmitted.
// Its GPUs' leases lapse meanwhile and their jobs are re-queued — the cost
// falls on the node that misbehaved.
type budgetKeeper struct {
	c      *Cluster
	log    *zap.Logger
	budget auth.EventBudget
	// nodes are the node names the roles file has node users for.
	nodes map[string]bool

	mu      sync.Mutex
	budgets *auth.Budgets
	cut     map[string]bool // the nodes cut off now
	emit    *events.Emitter
	subs    events.Subjects
}

// keepBudgets starts the keeper on an authenticated embedded server.
func (c *Cluster) keepBudgets(ctx context.Context, cfg Config) error {
	budget := cfg.NodeEventBudget
	if budget == (auth.EventBudget{}) {
		budget = auth.DefaultEventBudget()
	}
	if budget.Off || cfg.Auth == nil || c.server == nil {
		return nil
	}
	nodes := cfg.Auth.Nodes()
	if len(nodes) == 0 {
		return nil
	}
	nc, err := c.dial("budget", nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	k := &budgetKeeper{c: c, log: cfg.Logger, budget: budget, nodes: nodes, budgets: auth.NewBudgets(budget),
		cut: map[string]bool{}, subs: events.NewSubjects(cfg.Prefix)}
	k.emit = events.NewEmitter(nc, "/cluster/budget")
	cuts := make(chan cutOff, 16)
	count := func(m *nats.Msg) {
		node := k.subs.EventNode(m.Subject)
		// A message JetStream delivered (a pull or a consumer whose
		// deliver subject lies under the events) keeps its stored
		// subject, but the node did not send it now: charging it would
		// let whoever may read the stream cut any node off.
		if !k.nodes[node] || events.Redelivered(m) {
			return
		}
		k.mu.Lock()
		cut, coolOff := k.budgets.Charge(node, m.Size(), time.Now())
		k.mu.Unlock()
		if cut {
			// Never blocks the subscription: a second cut of the same
			// node cannot come before its readmission.
			select {
			case cuts <- cutOff{node: node, coolOff: coolOff}:
			default:
				k.log.Error("event budget: cut-offs pile up; this one is lost", zap.String("node", node))
			}
		}
	}
	// A flood is what these subscriptions are for: they must not be the
	// ones that drop it. Counting is cheap, so they keep up.
	if err := subscribeAll(nc, 1<<30, count, k.subs.AllGPUEvents(), k.subs.AllHeartbeats()); err != nil {
		nc.Close()
		return err
	}
	c.wg.Go(func() {
		defer nc.Close()
		k.run(ctx, cuts)
	})
	return nil
}

// subscribeAll subscribes handle to every subject on nc, each holding up
// to pendingBytes unread, and flushes: the server holds them when it
// returns.
func subscribeAll(nc *nats.Conn, pendingBytes int, handle nats.MsgHandler, subjects ...string) error {
	for _, subject := range subjects {
		sub, err := nc.Subscribe(subject, handle)
		if err != nil {
			return err
		}
		if err := sub.SetPendingLimits(-1, pendingBytes); err != nil {
			return err
		}
	}
	return nc.Flush()
}

type cutOff struct {
	node    string
	coolOff time.Duration
}

// run applies cut-offs and readmissions, one at a time (each is a reload
// of the server's configuration).
func (k *budgetKeeper) run(ctx context.Context, cuts <-chan cutOff) {
	readmit := make(chan string, 16)
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-cuts:
			k.mu.Lock()
			k.cut[c.node] = true
			n := k.budgets.Cuts(c.node)
			k.mu.Unlock()
			until := time.Now().Add(c.coolOff)
			if err := k.reload(); err != nil {
				k.log.Error("event budget: the server could not be reloaded without the node; it stays connected", zap.String("node", c.node), zap.Error(err))
			}
			k.log.Warn("event budget: node cut off for publishing more events than its budget",
				zap.String("node", c.node), zap.String("budget", k.budget.String()), zap.Duration("cool_off", c.coolOff), zap.Int("cuts", n))
			k.publish(events.NodeCutOff, events.NodeBudget{Node: c.node, Budget: k.budget.String(), Until: until.UTC(), Cuts: n})
			time.AfterFunc(c.coolOff, func() {
				select {
				case readmit <- c.node:
				case <-ctx.Done():
				}
			})
		case node := <-readmit:
			k.mu.Lock()
			n := k.budgets.Cuts(node)
			delete(k.cut, node)
			k.budgets.Readmit(node, time.Now())
			k.mu.Unlock()
			if err := k.reload(); err != nil {
				k.log.Error("event budget: the server could not be reloaded with the node back", zap.String("node", node), zap.Error(err))
			}
			k.log.Info("event budget: node readmitted", zap.String("node", node), zap.Int("cuts", n))
			k.publish(events.NodeReadmitted, events.NodeBudget{Node: node, Budget: k.budget.String(), Cuts: n})
		}
	}
}

// reload configures the embedded server with every user of the roles
// file except those of the nodes cut off now.
func (k *budgetKeeper) reload() error {
	k.mu.Lock()
	out := maps.Clone(k.cut)
	k.mu.Unlock()
	return k.c.reloadUsers(k.c.cfg.Auth.Without(out))
}

func (k *budgetKeeper) publish(typ string, data events.NodeBudget) {
	// The keeper runs on the wall clock: simulated time is the cluster's now.
	if err := k.emit.Emit(k.subs.SecurityEvent(typ), events.Type("security", typ), data.Node, k.c.Clock.Now(), data); err != nil {
		k.log.Warn("event budget: event not published", zap.String("type", typ), zap.Error(err))
	}
}

// reloadUsers reloads the embedded server with f's users (and the same
// everything else): clients whose users are gone are disconnected and
// refused.
func (c *Cluster) reloadUsers(f *auth.File) error {
	if c.server == nil || c.serverOpts == nil {
		return fmt.Errorf("no embedded server to reload")
	}
	fresh := &server.Options{}
	if err := auth.Configure(fresh, f, c.authSettings); err != nil {
		return err
	}
	opts := c.serverOpts.Clone()
	opts.Accounts, opts.Nkeys, opts.Users = fresh.Accounts, fresh.Nkeys, fresh.Users
	return c.server.ReloadOptions(opts)
}
