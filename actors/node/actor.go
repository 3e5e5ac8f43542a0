package node

import (
	"context"
	"fmt"
	gojson "github.com/goccy/go-json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/gpu"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/mailbox"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/simclock"
)

// DefaultHeartbeat is the wall-time period of node heartbeats: modest, so
// that 100,000 idle GPUs (12,500 nodes) cost a few thousand small messages
// a second, not one per GPU.
const DefaultHeartbeat = 2 * time.Second

// DefaultVirtualHeartbeat is the heartbeat period on a virtual clock, in
// simulated time: the wall default at the scaled clock's default speed
// (2 s × 120 = 4 simulated minutes), so a virtual run's liveness is the
// live demo's.
const DefaultVirtualHeartbeat = DefaultHeartbeat * simclock.DefaultSpeed

// firstHeartbeat is the longest a new node waits for its GPUs' first answers.
const firstHeartbeat = 500 * time.Millisecond

// Actor is a node actor: it owns the node's CPU and memory.
type Actor struct {
	spec      model.NodeSpec
	inc       int
	clock     simclock.Clock
	virtual   bool // clock is virtual
	leased    bool // its GPUs hold leases (on a virtual clock: beat periodically)
	subjects  events.Subjects
	emit      *events.Emitter
	log       *zap.Logger
	heartbeat time.Duration
	gpus      []*slot
	conn      *nats.Conn
	// beat numbers heartbeats; sent remembers when recent ones left, so a
	// lease grant counts from the send time of the heartbeat it answers.
	beat uint64
	sent map[uint64]time.Time

	mailbox *mailbox.Queue
	alive   chan gpu.Liveness
	// announce asks for a heartbeat now (Host.Announce).
	announce chan struct{}
	holds    map[string]*hold
	cpuUsed  float64
	memUsed  int64
}

type hold struct {
	cpu       float64
	mem       int64
	committed bool
	expires   time.Time
}

func newActor(spec model.NodeSpec, inc int, clock simclock.Clock, subjects events.Subjects, bus *nats.Conn,
	log *zap.Logger, heartbeat time.Duration, gpus []*slot) *Actor {
	return &Actor{
		spec: spec, inc: inc, clock: clock, virtual: simclock.IsVirtual(clock), subjects: subjects, heartbeat: heartbeat, gpus: gpus, conn: bus,
		sent:     map[uint64]time.Time{},
		emit:     events.NewEmitter(bus, "/node/"+spec.ID+"/"+strconv.Itoa(inc)),
		log:      log.With(zap.String("node", spec.ID)),
		mailbox:  mailbox.New(),
		alive:    make(chan gpu.Liveness, len(gpus)+1),
		announce: make(chan struct{}, 1),
		holds:    map[string]*hold{},
	}
}

// Run is the node actor's loop.
func (a *Actor) Run(ctx context.Context) {
	tick := time.NewTicker(a.heartbeat)
	defer tick.Stop()
	heard := map[string]gpu.Liveness{}
	a.ping()
	// The first heartbeat goes out as soon as every GPU has answered its
	// first ping (or after firstHeartbeat at the latest), so a scheduler
	// learns the node's resources at once and no GPU that is merely
	// starting is reported not alive (it would then wait a whole period).
	first := time.NewTimer(firstHeartbeat)
	defer first.Stop()
	firstSent := false
	// early: a heartbeat was asked for (Host.Announce on a scaled clock)
	// and goes out like the first one.
	early := false
	// On a virtual clock a node sends its first heartbeat once every GPU
	// has answered (re-pinged each wall period until then; there is no
	// deadline, the clock does not move before the scheduler has heard
	// from every GPU), then one every heartbeat period of simulated time,
	// in the instant's PhaseBeat. Those say what each GPU actor is at that
	// instant (Reachable: not hung, not cut off; its jobs) rather than
	// what answered a ping: pings are answered at wall-time moments, and a
	// run's heartbeats would then depend on how fast the machine is (two
	// runs of one seed differed by a round of heartbeats when the periodic
	// ones came from a wall ticker). Periodic ones only when the GPUs hold
	// leases (a virtual run with faults): without, a beat renews nothing,
	// and a node beating every few simulated minutes costs a long trace
	// millions of messages (openb's 1,213 nodes over 120 days: 52 M heartbeats).
	virtual := a.virtual
	var beat simclock.Timer
	defer func() {
		if beat != nil {
			beat.Stop()
		}
	}()
	if len(a.gpus) == 0 {
		firstSent = true
		a.publishHeartbeat(heard)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.mailbox.Wake:
			if m, ok := a.mailbox.Take(); ok {
				a.handle(m)
				a.clock.Release()
			}
		case l := <-a.alive:
			heard[l.GPU] = l
			if (!firstSent || early) && len(heard) == len(a.gpus) {
				firstSent, early = true, false
				first.Stop()
				a.publishHeartbeat(heard)
				if virtual && a.leased {
					beat = simclock.NewPhasedTimer(a.clock, a.heartbeat, simclock.PhaseBeat)
				}
			}
		case <-simclock.TimerC(beat):
			a.publishHeartbeat(a.reachable())
			beat = simclock.NewPhasedTimer(a.clock, a.heartbeat, simclock.PhaseBeat)
			a.clock.Release()
		case <-a.announce:
			if virtual {
				a.publishHeartbeat(a.current())
			} else if !early {
				// A new scheduler: every GPU is asked now, and the beat
				// goes out as a first one does (once all have answered, or
				// at firstHeartbeat with those that did), a period sooner
				// than the next tick.
				early = true
				first.Reset(firstHeartbeat)
				a.ping()
			}
			a.clock.Release()
		case <-first.C:
			if (!firstSent || early) && !virtual {
				firstSent, early = true, false
				a.publishHeartbeat(heard)
			}
		case <-tick.C:
			if virtual {
				if !firstSent {
					a.ping() // a GPU that was not up at the first ping
				}
				continue
			}
			a.expire()
			a.publishHeartbeat(heard)
			heard = map[string]gpu.Liveness{}
			a.ping()
		}
	}
}

// reachable is, on a virtual clock, each GPU that would answer its node
// now (simulated time): its incarnation and jobs; a GPU hung, cut off or
// between a crash and its restart is left out (not alive), as one that
// does not answer a ping on a scaled clock.
func (a *Actor) reachable() map[string]gpu.Liveness {
	now := a.clock.Now()
	out := map[string]gpu.Liveness{}
	for _, s := range a.gpus {
		if g := s.cur.Load(); g != nil && g.Reachable(now) {
			out[s.id] = gpu.Liveness{GPU: s.id, Incarnation: g.Incarnation(), Jobs: g.JobCount()}
		}
	}
	return out
}

// current is each GPU's liveness as its supervisor holds it now: the
// incarnation running, none for a GPU between a crash and its restart.
func (a *Actor) current() map[string]gpu.Liveness {
	out := map[string]gpu.Liveness{}
	for _, s := range a.gpus {
		if g := s.cur.Load(); g != nil {
			out[s.id] = gpu.Liveness{GPU: s.id, Incarnation: g.Incarnation()}
		}
	}
	return out
}

func (a *Actor) ping() {
	for _, s := range a.gpus {
		if g := s.cur.Load(); g != nil {
			g.Ping(a.alive)
		}
	}
}

func (a *Actor) publishHeartbeat(heard map[string]gpu.Liveness) {
	hb := events.NodeHeartbeat{Node: a.spec.ID, Incarnation: a.inc, Labels: a.spec.Labels,
		CPUTotal: a.spec.CPU, CPUUsed: a.cpuUsed, MemoryTotal: int64(a.spec.Memory), MemoryUsed: a.memUsed,
		BatchCtl: true} // its Host takes batched controls (onBatch)
	for _, s := range a.gpus {
		l, ok := heard[s.id]
		hb.GPUs = append(hb.GPUs, events.HeartbeatGPU{GPU: s.id, Incarnation: l.Incarnation, Alive: ok, Jobs: l.Jobs})
	}
	a.beat++
	hb.Beat = a.beat
	now := a.liveNow() // leases count in simulated time on a virtual clock
	a.sent[a.beat] = now
	// Send times older than a few periods can no longer be granted usefully.
	for b, t := range a.sent {
		if now.Sub(t) > 10*a.heartbeat {
			delete(a.sent, b)
		}
	}
	// The heartbeat asks for leases: its reply subject is the node's lease
	// subject, where the scheduler answers with a LeaseGrant.
	if err := a.emit.EmitReply(a.subjects.NodeHeartbeat(a.spec.ID), a.subjects.NodeLease(a.spec.ID), events.Type("node", "heartbeat"),
		a.spec.ID, a.clock.Now(), hb); err != nil {
		a.log.Warn("heartbeat publish failed", zap.Error(err))
	}
}

// grant passes a lease grant to the GPU actors it names (those still at
// the granted incarnation), counted from when the heartbeat left.
func (a *Actor) grant(m *nats.Msg) {
	var g events.LeaseGrant
	if err := gojson.Unmarshal(m.Data, &g); err != nil {
		a.log.Warn("bad lease grant", zap.Error(err))
		return
	}
	sent, ok := a.sent[g.Beat]
	if !ok || g.LeaseMS <= 0 {
		return
	}
	until := sent.Add(time.Duration(g.LeaseMS) * time.Millisecond)
	for _, hg := range g.GPUs {
		for _, s := range a.gpus {
			if s.id != hg.GPU {
				continue
			}
			if ga := s.cur.Load(); ga != nil {
				ga.Renew(hg.Incarnation, until)
			}
		}
	}
}

// liveNow is the time liveness counts in: the wall's on a scaled clock,
// simulated time on a virtual one (leases, reservation expiry), so that a
// virtual run does not depend on how fast the machine is.
func (a *Actor) liveNow() time.Time {
	if a.virtual {
		return a.clock.Now()
	}
	return time.Now()
}

func (a *Actor) expire() {
	now := a.liveNow()
	ids := make([]string, 0)
	for id, h := range a.holds {
		if !h.committed && now.After(h.expires) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		a.log.Info("node reservation expired", zap.String("job", id))
		a.free(id)
	}
}

// holdList is what the node holds, job by job, in job id order (a
// refusal's Holds).
func (a *Actor) holdList() []events.NodeHold {
	out := make([]events.NodeHold, 0, len(a.holds))
	for id, h := range a.holds {
		out = append(out, events.NodeHold{JobID: id, CPU: h.cpu, Memory: h.mem, Committed: h.committed})
	}
	slices.SortFunc(out, func(x, y events.NodeHold) int { return strings.Compare(x.JobID, y.JobID) })
	return out
}

func (a *Actor) free(id string) {
	if h, ok := a.holds[id]; ok {
		a.cpuUsed -= h.cpu
		a.memUsed -= h.mem
		delete(a.holds, id)
	}
}

func (a *Actor) handle(m *nats.Msg) {
	_, what, _ := events.ParseNodeSubject(m.Subject)
	if what == "lease" {
		a.grant(m)
		return
	}
	if what != "ctl" {
		return
	}
	c, fe := events.DecodeControl(m.Data)
	if fe != nil {
		a.log.Warn("bad control message", zap.String("field", fe.Field), zap.String("reason", fe.Message))
		events.Reply(m, events.ControlReply{Error: fe, Call: c.Call})
		return
	}
	// Each answer names its control's call (a batch's answers share one
	// reply subject).
	reply := func(r events.ControlReply) { r.Call = c.Call; events.Reply(m, r) }
	switch c.Op {
	case events.OpReserve:
		if c.JobID == "" || c.CPU < 0 || c.Memory < 0 {
			reply(events.ControlReply{Error: model.Errorf("job_id", "a reservation needs job_id and non-negative cpu and memory")})
			return
		}
		if _, ok := a.holds[c.JobID]; ok {
			reply(events.ControlReply{OK: true})
			return
		}
		a.expire()
		if a.spec.CPU-a.cpuUsed < c.CPU-1e-9 {
			reply(events.ControlReply{Reason: fmt.Sprintf("insufficient CPU: %.1f free, asked %.1f", a.spec.CPU-a.cpuUsed, c.CPU),
				Holds: a.holdList()})
			return
		}
		if int64(a.spec.Memory)-a.memUsed < c.Memory {
			reply(events.ControlReply{Reason: fmt.Sprintf("insufficient memory: %s free, asked %s",
				model.Bytes(int64(a.spec.Memory)-a.memUsed), model.Bytes(c.Memory)), Holds: a.holdList()})
			return
		}
		ttl := gpu.DefaultReservationTTL
		if c.TTLMillis > 0 {
			ttl = time.Duration(c.TTLMillis) * time.Millisecond
		}
		a.holds[c.JobID] = &hold{cpu: c.CPU, mem: c.Memory, expires: a.liveNow().Add(ttl)}
		a.cpuUsed += c.CPU
		a.memUsed += c.Memory
		reply(events.ControlReply{OK: true})
	case events.OpCommit:
		h, ok := a.holds[c.JobID]
		if !ok {
			reply(events.ControlReply{Reason: "no reservation for " + c.JobID + " (expired or aborted)"})
			return
		}
		h.committed = true
		reply(events.ControlReply{OK: true})
	case events.OpAbort, events.OpRelease, events.OpPreempt:
		a.free(c.JobID)
		for _, id := range c.Jobs {
			a.free(id)
		}
		reply(events.ControlReply{OK: true})
	case events.OpDescribe:
		reply(events.ControlReply{OK: true})
	default:
		reply(events.ControlReply{Error: model.Errorf("op", "unknown operation %q", c.Op)})
	}
}
