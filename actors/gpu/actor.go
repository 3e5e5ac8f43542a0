package gpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/pollux"
	"github.com/gpusched/gpusched/simclock"
	"github.com/gpusched/gpusched/vram"
)

// Config describes one GPU actor.
type Config struct {
	ID          string
	Node        string
	Model       model.GPUModel
	VRAMModel   vram.Model
	Incarnation int
	Clock       simclock.Clock
	Subjects    events.Subjects
	// Bus publishes the actor's events (a *nats.Conn shared by the host).
	Bus    events.Publisher
	Logger *zap.Logger
	// Interference is the noisy-neighbour coefficient: a running job slows
	// by 1/(1 + Interference × its co-runners' summed util/100) even when
	// the GPU is not saturated (0: no penalty; see docs/internals/actors.md).
	Interference float64
	// Lease is the wall-time lease the scheduler grants through the node's
	// heartbeats. An actor whose lease runs out (it is hung, or cut off
	// from the bus) stops its own jobs first and rejoins as its next
	// incarnation. Zero: no lease (the actor never fences itself).
	Lease time.Duration
	// EnergyJ is the energy meter at start: a restarted actor keeps the
	// card's meter.
	EnergyJ float64
	// Ended seeds the actor's memory of ended jobs: a restarted actor's
	// supervisor passes on the jobs the crash took, so a scheduler that
	// missed the gpu.down (it was restarting too) can still account for
	// them.
	Ended []events.EndedJob
	// StartHeld says the supervisor holds the clock for this incarnation's
	// start (its restart timer fired): Run lets go once gpu.up is out.
	StartHeld bool
	// Training is the application model this GPU runs distributed
	// training jobs on (the Pollux data folder's); nil: it refuses them.
	Training *pollux.Model
	// Throughputs is the table this GPU runs typed jobs at (a job type and
	// steps): their rate alone, or packed with the typed job they share
	// the GPU with, for this GPU's model. Nil: it refuses typed jobs.
	Throughputs *model.ThroughputTable
	// Variability is this GPU's pace per application class
	// (model.GPUSpec.Variability), advertised in its status so that the
	// scheduler can tell a gang its pace (events.Assignment.Pace).
	Variability map[string]float64
}

// Liveness is a GPU's answer to its node actor's ping.
type Liveness struct {
	GPU         string
	Incarnation int
	Jobs        int
}

// Actor is a GPU actor. Its state is touched only by its Run goroutine.
type Actor struct {
	cfg     Config
	mailbox *mailbox
	emit    *events.Emitter
	// base is the logger the actor was given; logger adds the GPU's
	// fields when a message is logged (rarely: a logger per GPU would cost
	// 16 MiB at 100,000 GPUs).
	base *zap.Logger

	layout  *vram.Layout
	shares  map[string]*share
	last    time.Time // simulated time progress and energy were last advanced to
	energyJ float64
	version uint64
	done    *simclock.Timer
	expiry  simclock.Timer
	// retime is set when the running jobs change, and with them the time
	// the next one completes: only then is the completion timer re-armed.
	retime bool
	// doneLate says the completion timer is a training job's late
	// completion (simclock.PhaseAfterDecide); afterDecide is set while it
	// is handled (training.stepTo).
	doneLate, afterDecide bool

	// leaseUntil is when this actor stops its own jobs unless renewed
	// (wall time; zero without a lease); renewals from the node actor come
	// through the mailbox.
	leaseUntil time.Time
	leaseTimer *time.Timer
	// leaseVTimer is the lease's timer on a virtual clock (simulated time).
	leaseVTimer simclock.Timer
	// hungUntil and cutUntil are when a virtual hang and a partition end
	// (simulated Unix nanoseconds, 0: none), for the node actor's
	// heartbeat to read (Reachable).
	hungUntil, cutUntil atomic.Int64
	// jobCount is how many jobs it holds, for the same heartbeat.
	jobCount atomic.Int64
	// faults is the chaos the actor is suffering; ended remembers the jobs
	// that left it lately, for a scheduler reconciling.
	faults faults
	ended  []events.EndedJob
	// crashed is set by a kill: Run returns it.
	crashed *Crash
	// virtual is set on a virtual clock: reservation expiry, faults and
	// hangs then run in simulated time (livetime.go). hangEnd is a
	// virtual hang's end (nil: not hung); backlog the mail that came
	// during it, handled when it ends.
	virtual   bool
	hangEnd   simclock.Timer
	hangUntil time.Time
	backlog   []*nats.Msg
	// inc mirrors cfg.Incarnation for other goroutines (the node actor).
	inc atomic.Int64
}

// Crash is why a GPU actor's Run ended other than by its context: a kill
// (chaos) or a panic its supervisor caught.
type Crash struct {
	Reason string
}

func (c *Crash) Error() string { return "GPU actor crashed: " + c.Reason }

// endedMemory bounds the ended jobs an actor remembers.
const endedMemory = 64

// share is one job's hold on this GPU: reserved until committed, then running.
type share struct {
	id       string
	job      events.Assignment
	offset   int64
	running  bool
	expires  time.Time // liveness time (liveNow); for reservations only
	progress float64   // reference seconds of work done (a training job's progress)
	// train is a training job's part (nil for any other job): its model,
	// not WorkS at a rate, says how it progresses.
	train *training
}

// New builds a GPU actor; Run starts it.
func New(cfg Config) *Actor {
	if cfg.Incarnation == 0 {
		cfg.Incarnation = 1
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	a := &Actor{
		cfg:     cfg,
		mailbox: newMailbox(),
		base:    log,
		layout:  vram.New(int64(cfg.Model.VRAM), cfg.VRAMModel),
		shares:  map[string]*share{},
		energyJ: cfg.EnergyJ,
		ended:   append([]events.EndedJob(nil), cfg.Ended...),
	}
	a.inc.Store(int64(cfg.Incarnation))
	a.virtual = simclock.IsVirtual(cfg.Clock)
	a.faults.timerFor = a.liveTimer
	a.emit = events.NewEmitter(a, a.source())
	return a
}

func (a *Actor) logger() *zap.Logger {
	return a.base.With(zap.String("gpu", a.cfg.ID), zap.String("node", a.cfg.Node))
}

// Incarnation is the actor's incarnation (it grows when the actor rejoins
// after losing its lease). Safe from any goroutine.
func (a *Actor) Incarnation() int { return int(a.inc.Load()) }

// renewal is a lease renewal for one incarnation.
type renewal struct {
	incarnation int
	until       time.Time
}

// Config is the configuration the actor was built with (its supervisor
// starts the next incarnation from it).
func (a *Actor) Config() Config { return a.cfg }

// EnergyJ is the card's energy meter.
func (a *Actor) EnergyJ() float64 { return a.energyJ }

// Renew extends incarnation's lease to until (wall time: the send time of
// the heartbeat the scheduler granted plus the lease); a renewal for
// another incarnation is ignored. It never blocks: a newer renewal
// replaces one the actor has not read yet. One goroutine (the node actor)
// renews.
func (a *Actor) Renew(incarnation int, until time.Time) {
	var hold func()
	if a.virtual {
		// A virtual clock waits until the actor has read it: the lease
		// timer it re-arms is then armed at a known instant.
		hold = a.cfg.Clock.Hold
	}
	a.mailbox.renew(renewal{incarnation: incarnation, until: until}, hold)
}

// ID is the GPU's id.
func (a *Actor) ID() string { return a.cfg.ID }

// Deliver puts a control message in the mailbox (it never blocks: the
// mailbox is unbounded); it reports false when ctx has ended.
func (a *Actor) Deliver(ctx context.Context, m *nats.Msg) bool {
	// The message is work the clock must wait for until Run has handled it.
	if ctx.Err() != nil {
		return false
	}
	return a.mailbox.deliver(m, a.cfg.Clock.Hold)
}

// Ping asks for liveness on reply; a busy or hung actor simply does not answer.
func (a *Actor) Ping(reply chan<- Liveness) { a.mailbox.askLiveness(reply) }

// Run is the actor's loop. It returns nil when ctx ends, and a *Crash
// when the actor is killed; its supervisor then publishes gpu.down (Down)
// and starts the next incarnation. A crash leaves the clock held once —
// the kill (or the work a panic interrupted) was held — for the
// supervisor to let go.
func (a *Actor) Run(ctx context.Context) (err error) {
	defer func() {
		a.stopTimers()
		// A panic is a crash like a kill: the supervisor restarts the GPU.
		if r := recover(); r != nil {
			err = &Crash{Reason: fmt.Sprintf("panic: %v", r)}
		}
	}()
	a.last = a.cfg.Clock.Now()
	a.renewFrom(a.liveNow())
	a.publish(events.GPUUp, events.ChangeUp, "")
	if a.cfg.StartHeld {
		// The restart timer's hold, let go once gpu.up is out.
		a.cfg.StartHeld = false
		a.cfg.Clock.Release()
	}
	// Each case's work is a method of its own: while the actor waits, its
	// goroutine's stack holds only this loop's small frame, so an idle
	// GPU actor's stack comes back to 4 KiB after work that grew it. (Not
	// to the runtime's 2 KiB: a stack is halved only when under a quarter
	// of it, plus 800 bytes, is in use; docs/notes/2026-12-07-idle-stacks.md.)
	for {
		var doneC, expiryC, leaseC, hangC <-chan time.Time
		if a.done != nil {
			doneC = (*a.done).C()
		}
		if a.expiry != nil {
			expiryC = a.expiry.C()
		}
		if a.hangEnd != nil {
			hangC = a.hangEnd.C()
		}
		if a.leaseTimer != nil {
			leaseC = a.leaseTimer.C
		}
		var leaseVC <-chan time.Time
		if a.leaseVTimer != nil {
			leaseVC = a.leaseVTimer.C()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.mailbox.Wake:
			a.onNodeMail()
			if stop, err := a.onMail(ctx); stop {
				return err
			}
		case <-doneC:
			a.onDone()
		case <-expiryC:
			a.onExpiry()
		case <-leaseC:
			a.leaseTimer = nil
			a.checkLease()
		case <-leaseVC:
			a.onVirtualLease()
		case <-a.faults.timerC():
			a.onFaultTimer()
		case <-hangC:
			if stop, err := a.wake(ctx); stop {
				return err
			}
		}
	}
}

// onMail handles the mailbox's oldest message; stop is set when Run must
// return err (a crash; nil when ctx ended during a hang).
//
//go:noinline
func (a *Actor) onMail(ctx context.Context) (stop bool, err error) {
	m, ok := a.mailbox.Take()
	if !ok {
		return false, nil
	}
	if a.hangEnd != nil && !isFault(m) {
		// Hung (on a virtual clock): the message waits, and the clock may
		// move on to the hang's end meanwhile. A fault is taken at once
		// (isFault).
		a.backlog = append(a.backlog, m)
		a.cfg.Clock.Release()
		return false, nil
	}
	return a.mail(ctx, m, true)
}

// mail handles one message; held says the clock holds for it (released
// here, or on a crash handed to the supervisor).
func (a *Actor) mail(ctx context.Context, m *nats.Msg, held bool) (stop bool, err error) {
	if a.faults.cutOff(a.liveNow()) && !isFault(m) {
		// Cut off from the bus: the message never arrived (a fault does:
		// isFault).
		if held {
			a.cfg.Clock.Release()
		}
		return false, nil
	}
	if a.hangEnd == nil {
		// A hung actor takes a fault (isFault) but notices nothing else
		// until it wakes, its lapsed lease included (wake checks it): it
		// fenced here, mid-hang, and rejoined as a new incarnation that
		// its node could not vouch for, so the scheduler declared the
		// same hung GPU dead a second time a lease later.
		a.fenceIfLapsed()
	}
	a.handle(m)
	if a.crashed != nil {
		// The kill's hold of the clock goes to the supervisor, which lets
		// go once the next incarnation is armed: on a virtual clock time
		// must not move between a death and its restart's timer. (A
		// message from a hang's backlog has no hold of its own: the hang
		// timer's goes.)
		return true, a.crashed
	}
	a.rearm()
	// A virtual hang's end is armed before the message lets the clock go:
	// armed after, it would count from wherever the clock had moved
	// meanwhile (seen under -race on a loaded machine, in 4 of 280 runs of
	// one chaos seed: a 15-minute hang ending four minutes late, with
	// progress made in between).
	d := a.faults.takeHang()
	if d > 0 && a.virtual {
		if a.hangEnd != nil {
			a.hangLonger(d)
		} else {
			a.startHang(d)
		}
	}
	if held {
		a.cfg.Clock.Release()
	}
	if d > 0 && !a.virtual && !a.hang(ctx, d) {
		return true, nil // on the wall the goroutine itself sleeps through the hang
	}
	return false, nil
}

// onExpiry expires the reservations due (a hung GPU does nothing: they
// are re-armed when it wakes).
//
//go:noinline
func (a *Actor) onExpiry() {
	a.expiry = nil
	if a.hangEnd == nil {
		a.expireReservations()
		a.rearm()
	}
	a.liveDone()
}

// onFaultTimer is the fault timer firing (a hung GPU takes it when it wakes).
//
//go:noinline
func (a *Actor) onFaultTimer() {
	a.faults.timer = nil
	if a.hangEnd == nil {
		a.faultTick()
	}
	a.liveDone()
}

// onDone advances the jobs to now when the next of them is due.
//
//go:noinline
func (a *Actor) onDone() {
	a.done = nil
	if a.hangEnd != nil {
		// A hung GPU runs nothing: its jobs' times are counted again when it wakes.
		a.cfg.Clock.Release()
		return
	}
	a.fenceIfLapsed()
	a.afterDecide = a.doneLate
	a.advance()
	a.afterDecide = false
	a.finishDue() // re-armed below: a.done is nil
	a.rearm()
	a.cfg.Clock.Release()
}

// onNodeMail takes what the node left (a renewal, a ping) and lets go
// of the clock for each renewal that held it.
func (a *Actor) onNodeMail() {
	r, leased, ping, holds := a.mailbox.takeNode()
	if leased || ping != nil {
		a.onNode(r, leased, ping)
	}
	for range holds {
		a.cfg.Clock.Release()
	}
}

// onNode takes the node's lease renewal and answers its ping.
//
//go:noinline
func (a *Actor) onNode(r renewal, leased bool, reply chan<- Liveness) {
	if a.faults.cutOff(a.liveNow()) || a.hangEnd != nil {
		return // cut off: neither reached it, and its answer would cross the bus
	}
	if leased && r.incarnation == a.cfg.Incarnation {
		a.renew(r.until)
	}
	if reply != nil {
		// Nothing changes: the timers stand.
		select {
		case reply <- Liveness{GPU: a.cfg.ID, Incarnation: a.cfg.Incarnation, Jobs: len(a.shares)}:
		default:
		}
	}
}

func (a *Actor) stopTimers() {
	if a.done != nil {
		(*a.done).Stop()
	}
	if a.expiry != nil {
		a.expiry.Stop()
	}
	if a.leaseTimer != nil {
		a.leaseTimer.Stop()
	}
	if a.leaseVTimer != nil {
		a.leaseVTimer.Stop()
	}
	if a.hangEnd != nil {
		a.hangEnd.Stop()
	}
	a.faults.stop()
}

// slowdown is the factor a running job with util own runs at when its
// co-runners on this GPU sum to others: saturation (when the summed util
// exceeds 100% each gets 100/sum of its demand, so they slow in
// proportion) times the noisy-neighbour penalty below saturation.
func (a *Actor) slowdown(own, sum float64) float64 {
	f := 1.0
	if sum > 100 {
		f = 100 / sum
	}
	if others := sum - own; others > 0 && a.cfg.Interference > 0 {
		f /= 1 + a.cfg.Interference*others/100
	}
	return f
}

func (a *Actor) runningUtil() float64 {
	var sum float64
	for _, s := range a.shares {
		if s.running {
			sum += s.job.Util
		}
	}
	return sum
}

// rate is reference seconds of work (steps, for a typed job) per
// simulated second for the running job s: its model's relative speed (a
// heterogeneous cluster runs the same job at different speeds) times its
// slowdown from co-location, or its typed rate; either ÷ its gang's pace
// (the slowest GPU of the gang and the cost of crossing nodes).
func (a *Actor) rate(s *share, sum float64) float64 {
	pace := 1.0
	if s.job.Pace > 0 {
		pace = s.job.Pace
	}
	if r, ok := a.typedRate(s); ok {
		return r / pace
	}
	return a.cfg.Model.Speed * a.slowdown(s.job.Util, sum) / pace
}

// advance moves progress and energy to the clock's now.
func (a *Actor) advance() {
	if a.hangEnd != nil {
		return // hung: no progress, no energy (wake moves last on)
	}
	now := a.cfg.Clock.Now()
	dt := now.Sub(a.last).Seconds()
	// A late training completion comes at an instant already advanced to.
	if dt < 0 || dt == 0 && !a.afterDecide {
		return
	}
	a.last = now
	util := a.runningUtil()
	busy := false
	for _, s := range a.shares {
		if s.running {
			busy = true
			if s.train != nil {
				s.train.stepTo(now, a.afterDecide, a.base)
				s.progress = s.train.job.Progress
				continue
			}
			s.progress = min(s.progress+a.rate(s, util)*dt, s.job.WorkS)
		}
	}
	a.energyJ += a.cfg.Model.Power(util, busy) * dt
}

// finishEpsilon absorbs float rounding in progress: a job within a
// millisecond of its work is done.
const finishEpsilon = 1e-3

func (a *Actor) finishDue() {
	for _, id := range a.sortedIDs() {
		s := a.shares[id]
		if s.running && s.train != nil && s.train.job.Done {
			a.remember(id, events.ChangeCompleted, s.progress)
			a.remove(id)
			a.publishLeft(events.ChangeCompleted, id, s)
			continue
		}
		if s.running && s.train == nil && s.progress >= s.job.WorkS-finishEpsilon {
			s.progress = s.job.WorkS
			a.remember(id, events.ChangeCompleted, s.progress)
			a.remove(id)
			a.publish(events.GPUStatusType, events.ChangeCompleted, id)
		}
	}
}

func (a *Actor) expireReservations() {
	now := a.liveNow()
	for _, id := range a.sortedIDs() {
		s := a.shares[id]
		if !s.running && !now.Before(s.expires) {
			a.logger().Info("reservation expired", zap.String("job", id))
			// Remembered: a scheduler that placed the job and died before
			// seeing this learns from it that the job never ran here.
			a.remember(id, events.ChangeExpired, s.job.ProgressS)
			a.remove(id)
			a.publish(events.GPUStatusType, events.ChangeExpired, id)
		}
	}
}

// rearm sets the completion timer for the running job that ends first and
// the wall timer for the reservation that expires first. It advances
// progress first, so the remaining work it times is current.
func (a *Actor) rearm() {
	a.jobCount.Store(int64(len(a.shares)))
	a.advance()
	if a.done != nil && !a.retime {
		a.armExpiry()
		return // the running jobs are unchanged, so is their next completion
	}
	a.retime = false
	if a.done != nil {
		(*a.done).Stop()
		a.done = nil
	}
	util := a.runningUtil()
	now := a.cfg.Clock.Now()
	next, late := time.Duration(-1), false
	for _, s := range a.shares {
		if !s.running {
			continue
		}
		var left time.Duration
		isLate := false
		if s.train != nil {
			due, l := s.train.due()
			if due.IsZero() {
				continue
			}
			left, isLate = max(0, due.Sub(now)), l
		} else {
			left = time.Duration((s.job.WorkS - s.progress) / a.rate(s, util) * float64(time.Second))
		}
		// At one instant, what is due before the decisions goes first.
		if next < 0 || left < next || left == next && late && !isLate {
			next, late = left, isLate
		}
	}
	if next >= 0 {
		phase := simclock.PhaseEvent
		if late {
			phase = simclock.PhaseAfterDecide
		}
		t := simclock.NewPhasedTimer(a.cfg.Clock, next, phase)
		a.done, a.doneLate = &t, late
	}
	a.armExpiry()
}

// armExpiry sets the wall timer for the reservation that expires first, if
// none is set.
func (a *Actor) armExpiry() {
	if a.expiry != nil {
		return
	}
	var nextExpiry time.Time
	for _, s := range a.shares {
		if !s.running && (nextExpiry.IsZero() || s.expires.Before(nextExpiry)) {
			nextExpiry = s.expires
		}
	}
	if !nextExpiry.IsZero() {
		a.expiry = a.liveTimer(nextExpiry.Sub(a.liveNow()))
	}
}

func (a *Actor) sortedIDs() []string {
	ids := make([]string, 0, len(a.shares))
	for id := range a.shares {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (a *Actor) remove(id string) {
	if s, ok := a.shares[id]; ok && s.running {
		a.retime = true
	}
	delete(a.shares, id)
	a.layout.Release(id)
	a.version++
}

func (a *Actor) handle(m *nats.Msg) {
	c, fe := events.DecodeControl(m.Data)
	if fe != nil {
		a.logger().Warn("bad control message", zap.String("field", fe.Field), zap.String("reason", fe.Message))
		a.answer(m, c.Call, events.ControlReply{Error: fe})
		return
	}
	// What a drop fault draws for the answer by (faults.drops): the
	// control, not its reply subject.
	if a.faults.draws != nil {
		a.faults.naming("answer " + c.Op + " " + c.JobID)
		defer a.faults.naming("")
	}
	a.advance()
	switch c.Op {
	case events.OpReserve:
		r := a.reserve(c)
		r.Incarnation = a.cfg.Incarnation
		a.answer(m, c.Call, r)
	case events.OpCommit:
		s, ok := a.shares[c.JobID]
		if !ok {
			a.answer(m, c.Call, events.ControlReply{Reason: "no reservation for " + c.JobID + " (expired or aborted)"})
			return
		}
		if !s.running {
			s.running = true
			s.progress = s.job.ProgressS
			if s.train != nil {
				s.train.start(a.cfg.Clock.Now(), a.base)
				s.progress = s.train.job.Progress
			}
			a.version++
			a.retime = true
			a.publish(events.GPUStatusType, events.ChangeCommitted, c.JobID)
		}
		a.answer(m, c.Call, events.ControlReply{OK: true, Version: a.version})
	case events.OpAbort:
		if _, ok := a.shares[c.JobID]; ok {
			a.remove(c.JobID)
			a.publish(events.GPUStatusType, events.ChangeAborted, c.JobID)
		}
		a.answer(m, c.Call, events.ControlReply{OK: true, Version: a.version})
	case events.OpPreempt, events.OpRelease:
		ids := c.Jobs
		if c.JobID != "" {
			ids = append(ids, c.JobID)
		}
		reply := events.ControlReply{OK: true}
		for _, id := range ids {
			s, ok := a.shares[id]
			if !ok {
				if e, ended := events.LastEnded(a.ended, id); ended {
					reply.Ended = append(reply.Ended, events.Stopped{JobID: id, ProgressS: e.ProgressS})
				}
				continue
			}
			stopped := events.Stopped{JobID: id, ProgressS: s.progress}
			if s.train != nil {
				stopped.Training = s.train.state()
			}
			reply.Stopped = append(reply.Stopped, stopped)
			change := events.ChangePreempted
			if c.Op == events.OpRelease {
				change = events.ChangeReleased
			}
			a.remember(id, change, s.progress)
			a.remove(id)
			a.publishLeft(change, id, s)
		}
		reply.Version = a.version
		a.answer(m, c.Call, reply)
	case events.OpKill:
		a.answerFault(m, c.Call, a.kill(c.Reason))
	case events.OpChaos:
		if fe := a.faults.apply(c.Chaos, a.liveNow(), a.cfg.ID); fe != nil {
			a.answerFault(m, c.Call, events.ControlReply{Error: fe})
			return
		}
		a.logger().Warn("chaos", zap.String("action", c.Chaos.Action), zap.Int64("duration_ms", c.Chaos.DurationMS),
			zap.Int64("delay_ms", c.Chaos.DelayMS), zap.Float64("drop", c.Chaos.Drop))
		st := a.status("", "")
		// The answer goes out before the fault bites (a partition or hang
		// starts once it is sent).
		a.answerFault(m, c.Call, events.ControlReply{OK: true, Version: a.version, Status: &st})
		a.faults.begin(a.liveNow())
		a.publishReach()
	case events.OpDescribe:
		st := a.status("", "")
		if c.WithSpecs {
			st = a.statusWithSpecs()
		}
		a.answer(m, c.Call, events.ControlReply{OK: true, Version: a.version, Status: &st})
	default:
		a.answer(m, c.Call, events.ControlReply{Error: model.Errorf("op", "unknown operation %q", c.Op)})
	}
}

// kill is the chaos hook that crashes the actor: it answers with the jobs
// it held (their work since the last checkpoint is lost) and its Run
// returns; the supervisor publishes gpu.down and, after a backoff, starts
// the next incarnation, empty, with a new event source.
func (a *Actor) kill(reason string) events.ControlReply {
	if reason == "" {
		reason = "killed"
	}
	a.crashed = &Crash{Reason: reason}
	st := a.status(events.ChangeKilled, "")
	lost := make([]events.Stopped, 0, len(st.Jobs))
	for _, j := range st.Jobs {
		lost = append(lost, events.Stopped{JobID: j.JobID, ProgressS: j.ProgressS})
	}
	return events.ControlReply{OK: true, Stopped: lost, Status: &st}
}

// Down publishes gpu.down for this (dead) incarnation with reason and the
// jobs it held: the supervisor calls it once Run has returned, so it owns
// the actor's remains. The energy meter is the card's, not the actor's: the
// next incarnation starts from EnergyJ.
func (a *Actor) Down(reason string) events.GPUStatus {
	a.advance()
	down := a.status(events.ChangeCrashed, "")
	down.Reason = reason
	a.logger().Warn("GPU actor down", zap.String("reason", reason), zap.Int("jobs_lost", len(down.Jobs)),
		zap.Int("incarnation", a.cfg.Incarnation))
	// A crashed actor's buffered and delayed messages die with it.
	a.faults = faults{}
	if err := a.emit.Emit(a.cfg.Subjects.GPUEvent(a.cfg.Node, a.cfg.ID, events.GPUDown), events.Type("gpu", events.GPUDown),
		a.cfg.ID, a.cfg.Clock.Now(), down); err != nil {
		a.logger().Warn("publish failed", zap.String("type", events.GPUDown), zap.Error(err))
	}
	return down
}

// Drain empties the mailbox of a dead actor, releasing the clock for each
// message, and reports how many it dropped.
func (a *Actor) Drain() int {
	// Closed first: a message its router had in hand when the actor died
	// is refused rather than left holding the clock in a mailbox no one
	// reads any more.
	for range a.mailbox.close() {
		a.cfg.Clock.Release()
	}
	n := 0
	for {
		if _, ok := a.mailbox.Take(); !ok {
			return n
		}
		a.cfg.Clock.Release()
		n++
	}
}

func (a *Actor) source() string {
	return "/gpu/" + a.cfg.Node + "/" + a.cfg.ID + "/" + strconv.Itoa(a.cfg.Incarnation)
}

// DefaultReservationTTL bounds an uncommitted reservation when the request gives none.
const DefaultReservationTTL = 2 * time.Second

// maxPace bounds a gang's pace: a job 10^6 times slower than nominal is
// no job a variability profile describes (PAL's worst GPU is 2.8×).
const maxPace = 1e6

func (a *Actor) reserve(c events.Control) events.ControlReply {
	if c.Job == nil || c.JobID == "" {
		return events.ControlReply{Error: model.Errorf("job", "a reservation needs job_id and job")}
	}
	if s, ok := a.shares[c.JobID]; ok {
		return events.ControlReply{OK: true, Offset: s.offset, Version: a.version}
	}
	if !a.leased() {
		st := a.status("", "")
		return events.ControlReply{Reason: "no lease: the scheduler has not renewed this GPU's lease", Version: a.version, Status: &st}
	}
	if c.Job.VRAM <= 0 || c.Job.Milli < 0 || c.Job.Milli > MilliPerGPU {
		return events.ControlReply{Error: model.Errorf("job", "a reservation needs positive vram and a gpu_milli of 0..1000")}
	}
	if p := c.Job.Pace; p < 0 || p > maxPace || math.IsNaN(p) {
		return events.ControlReply{Error: model.Errorf("job.pace", "must be a multiplier above 0 and at most %g (0: none), not %v", float64(maxPace), p)}
	}
	var train *training
	if c.Job.Training != nil {
		var fe *model.FieldError
		if train, fe = newTraining(a.cfg.Training, c.Job.Name, c.Job.Training); fe != nil {
			return events.ControlReply{Error: fe}
		}
	}
	if reason, fe := a.refuseTyped(c.Job); fe != nil {
		return events.ControlReply{Error: fe}
	} else if reason != "" {
		st := a.status("", "")
		return events.ControlReply{Reason: reason, Version: a.version, Status: &st}
	}
	if used := a.milliUsed(); used+c.Job.Milli > MilliPerGPU {
		reason := "insufficient GPU share: " + strconv.Itoa(MilliPerGPU-used) + "/1000 free, asked " + strconv.Itoa(c.Job.Milli)
		a.emit.Emit(a.cfg.Subjects.GPUEvent(a.cfg.Node, a.cfg.ID, events.GPUOOM), events.Type("gpu", events.GPUOOM),
			a.cfg.ID, a.cfg.Clock.Now(), events.GPUOOMEvent{GPU: a.cfg.ID, Node: a.cfg.Node, JobID: c.JobID,
				VRAM: c.Job.VRAM, Free: a.layout.Free(), Hole: a.layout.LargestFree(), Reason: reason})
		st := a.status("", "")
		return events.ControlReply{Reason: reason, Version: a.version, Status: &st}
	}
	offset, err := a.layout.Allocate(c.JobID, c.Job.VRAM)
	if err != nil {
		reason := err.Error()
		if errors.Is(err, vram.ErrFragmented) {
			reason = "fragmented VRAM: " + model.Bytes(a.layout.Free()).String() + " free, largest free block " +
				model.Bytes(a.layout.LargestFree()).String() + ", asked " + model.Bytes(c.Job.VRAM).String()
		} else if errors.Is(err, vram.ErrInsufficient) {
			reason = "insufficient VRAM: " + model.Bytes(a.layout.Free()).String() + " free, asked " + model.Bytes(c.Job.VRAM).String()
		}
		a.emit.Emit(a.cfg.Subjects.GPUEvent(a.cfg.Node, a.cfg.ID, events.GPUOOM), events.Type("gpu", events.GPUOOM),
			a.cfg.ID, a.cfg.Clock.Now(), events.GPUOOMEvent{GPU: a.cfg.ID, Node: a.cfg.Node, JobID: c.JobID,
				VRAM: c.Job.VRAM, Free: a.layout.Free(), Hole: a.layout.LargestFree(), Reason: reason})
		st := a.status("", "")
		return events.ControlReply{Reason: reason, Version: a.version, Status: &st}
	}
	ttl := DefaultReservationTTL
	if c.TTLMillis > 0 {
		ttl = time.Duration(c.TTLMillis) * time.Millisecond
	}
	a.shares[c.JobID] = &share{id: c.JobID, job: *c.Job, offset: offset, expires: a.liveNow().Add(ttl), progress: c.Job.ProgressS, train: train}
	a.version++
	if a.expiry != nil {
		a.expiry.Stop()
		a.expiry = nil
	}
	return events.ControlReply{OK: true, Offset: offset, Version: a.version}
}

// MilliPerGPU is the whole GPU in the shares jobs reserve (gpu_milli).
const MilliPerGPU = 1000

// milliUsed is the share of the GPU reserved or running jobs hold.
func (a *Actor) milliUsed() int {
	m := 0
	for _, s := range a.shares {
		m += s.job.Milli
	}
	return m
}

func (a *Actor) status(change, jobID string) events.GPUStatus {
	util := a.runningUtil()
	busy := false
	st := events.GPUStatus{
		GPU: a.cfg.ID, Node: a.cfg.Node, Model: a.cfg.Model.Name, Incarnation: a.cfg.Incarnation,
		Version: a.version, VRAMModel: string(a.layout.Model), VRAMTotal: a.layout.Capacity,
		VRAMUsed: a.layout.Used(), VRAMLargestFree: a.layout.LargestFree(), Util: util,
		EnergyJ: a.energyJ, Change: change, JobID: jobID, Jobs: make([]events.GPUJob, 0, len(a.shares)),
		MilliUsed: a.milliUsed(), Variability: a.cfg.Variability,
	}
	for _, al := range a.layout.Allocs() {
		s := a.shares[al.Owner]
		j := events.GPUJob{JobID: s.id, Name: s.job.Name, Priority: s.job.Priority, State: events.GPUJobReserved,
			VRAM: s.job.VRAM, Offset: s.offset, Util: s.job.Util, Milli: s.job.Milli, ProgressS: s.progress, WorkS: s.job.WorkS}
		if s.running {
			j.State, j.Rate, busy = events.GPUJobRunning, a.rate(s, util), true
		}
		if s.train != nil {
			j.Rate, j.WorkS, j.Training = 0, s.train.job.Target(), s.train.state()
		}
		j.JobType, _ = s.jobType()
		st.Jobs = append(st.Jobs, j)
	}
	st.PowerW = a.cfg.Model.Power(util, busy)
	return st
}

// remember records a job leaving the GPU, for a reconciling scheduler.
func (a *Actor) remember(id, change string, progress float64) {
	if len(a.ended) >= endedMemory {
		a.ended = a.ended[1:]
	}
	// On the GPU's clock, as its events' simtime: a virtual run's
	// statuses are then the same bytes in every run of a seed.
	e := events.EndedJob{JobID: id, Change: change, ProgressS: progress, At: a.cfg.Clock.Now()}
	if s, ok := a.shares[id]; ok {
		job := s.job
		e.Assignment = &job
		if s.train != nil {
			e.Training = s.train.state()
		}
	}
	a.ended = append(a.ended, e)
}

// Remains are the jobs a dead actor held, as ended by change, with the
// memory it had: what its supervisor passes on to the next incarnation.
func (a *Actor) Remains(change string) []events.EndedJob {
	for _, id := range a.sortedIDs() {
		if s := a.shares[id]; s.running {
			a.remember(id, change, s.progress)
		} else {
			a.remember(id, events.ChangeExpired, s.job.ProgressS) // its commit never came
		}
	}
	return append([]events.EndedJob(nil), a.ended...)
}

// statusWithSpecs is the status with each job's assignment and the jobs
// that ended lately: what a restarted scheduler needs to re-learn.
func (a *Actor) statusWithSpecs() events.GPUStatus {
	st := a.status("", "")
	for i := range st.Jobs {
		if s, ok := a.shares[st.Jobs[i].JobID]; ok {
			job := s.job
			st.Jobs[i].Assignment = &job
		}
	}
	st.Ended = append([]events.EndedJob(nil), a.ended...)
	return st
}

// reply answers a control request through the actor's outgoing path (so
// chaos that delays, drops or cuts off its messages applies to replies).
// answer replies to the control named call with r, which names it back
// (a batch's answers share one reply subject).
func (a *Actor) answer(m *nats.Msg, call string, r events.ControlReply) {
	r.Call = call
	if r.Incarnation == 0 {
		// Every answer says which incarnation gave it: a stop's answer
		// carries the GPU's version, which means nothing for another one.
		r.Incarnation = a.cfg.Incarnation
	}
	a.reply(m, r)
}

func (a *Actor) reply(m *nats.Msg, v any) {
	if m.Reply == "" {
		return
	}
	// goccy/go-json, as events.Emitter: the same JSON as encoding/json at
	// about twice the speed (encoding/json's here was 3 % of a simtest
	// profile's CPU: every reservation, commit and stop is answered).
	b, err := gojson.Marshal(v)
	if err != nil {
		a.logger().Warn("reply encoding failed", zap.Error(err))
		return
	}
	a.Publish(m.Reply, b)
}

func (a *Actor) publish(typ, change, jobID string) {
	a.publishStatus(typ, a.status(change, jobID))
}

// publishLeft publishes the status after the job s left by change: a
// training job's state goes with it.
func (a *Actor) publishLeft(change, jobID string, s *share) {
	st := a.status(change, jobID)
	if s.train != nil {
		st.Training = s.train.state()
	}
	a.publishStatus(events.GPUStatusType, st)
}

func (a *Actor) publishStatus(typ string, st events.GPUStatus) {
	if a.faults.draws != nil {
		defer a.faults.naming(a.faults.naming("status " + typ + " " + st.Change + " " + st.JobID))
	}
	if err := a.emit.Emit(a.cfg.Subjects.GPUEvent(a.cfg.Node, a.cfg.ID, typ), events.Type("gpu", typ), a.cfg.ID, a.cfg.Clock.Now(), st); err != nil {
		a.logger().Warn("publish failed", zap.String("type", typ), zap.Error(err))
	}
}
