package scheduler

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/simclock"
)

// Config configures the scheduler actor: the core's configuration
// (policies, timeouts, seed, what a restart inherits) and what the shell
// needs to carry it over NATS.
type Config struct {
	core.Config
	Conn  *nats.Conn
	Clock simclock.Clock
	// Tenants maps each tenant account of an authenticated bus to its
	// tenant (auth.File.Tenants): a request from such an account sees and
	// acts on that tenant's jobs only. Nil: no roles file; a request that
	// crossed another account's import is then refused (auth.CallerTenant).
	Tenants map[string]string
	// Journal, when set, keeps every accepted job's record in JetStream;
	// a submission is answered once its record is stored.
	Journal *durable.Journal
	// MemoryJournal, when set and Journal is not, keeps the records in
	// the process's memory instead (a virtual run whose scheduler is
	// killed): written and confirmed within the step that writes them.
	MemoryJournal *durable.MemoryJournal
	// Trace, when set, is called on the scheduler's goroutine at each
	// stage of the requests it handles (the Stage constants), for a
	// benchmark that shows where a submission's time goes; nil costs one
	// comparison per stage.
	Trace func(Stage)
	// Fenced, when set, says whether this process has lost its leadership
	// of the job journal (cluster's leader.go: unrenewed for too long, or
	// another control plane took it): the scheduler then steps its core
	// with nothing more and is deposed. Asked before every step, so a
	// process woken after a long stop acts on nothing it had queued.
	Fenced func() bool
}

// Stage is a point of the scheduler's loop that Config.Trace reports.
type Stage int

// The stages Config.Trace reports.
const (
	// StageSubmit: a job.submit taken from the mailbox, before decoding.
	StageSubmit Stage = iota
	// StageSent: a control batch handed to the connection that carries
	// calls, controls whose answers the scheduler waits for (a
	// placement's reservations).
	StageSent
	// StageAnswer: an answer to one of a batch's calls taken from the
	// mailbox.
	StageAnswer
	// StageStored: the store's confirmation of a record taken.
	StageStored
	// StageReplied: the reply to the last StageSubmit's submission handed
	// to the connection (other replies, a cancel's or a node's, are not
	// reported: they would end the submission's stages early).
	StageReplied
)

// trace reports stage to Config.Trace, if any.
func (s *Scheduler) trace(stage Stage) {
	if s.cfg.Trace != nil {
		s.cfg.Trace(stage)
	}
}

// Defaults for Config's zero values (the core applies them).
const (
	DefaultCallTimeout    = core.DefaultCallTimeout
	DefaultReservationTTL = core.DefaultReservationTTL
	DefaultMetricsPeriod  = core.DefaultMetricsPeriod
	// DefaultLease is a GPU's lease when Config.Lease is zero.
	DefaultLease = core.DefaultLease
	// MaxHeartbeatGPUs bounds the GPUs a node's heartbeat may name.
	MaxHeartbeatGPUs = core.MaxHeartbeatGPUs
	mailboxSize      = 4096
)

// ErrKilled is what Run returns when a kill control (chaos) crashed the
// scheduler; its supervisor starts the next incarnation.
var ErrKilled = errors.New("scheduler killed")

// ErrDeposed is what Run returns when another control plane took the job
// journal over (its fence refused a write of this one, or this process
// could not renew its leadership for a lease): this scheduler must place
// nothing more, and is not restarted here.
var ErrDeposed = errors.New("scheduler deposed: another control plane took over the job journal")

// ErrFailedOver is what Run returns when a failover-scheduler fault has
// run its course: the scheduler, cut off, fenced itself, and a standby
// takes the control plane over from the journal (its supervisor starts it
// at once).
var ErrFailedOver = errors.New("scheduler failed over: cut off from the bus, a standby took the control plane over")

// leaseChecks is how many times per lease the scheduler looks for expired
// leases: a death is declared at most a tenth of a lease late.
const leaseChecks = 10

// journalFlushTimeout bounds the wait for a journal write the shell must
// see stored (the incarnation at the start, a dead scheduler's last writes).
const journalFlushTimeout = 5 * time.Second

// journalRetry is the wait before a failed journal write is tried again.
const journalRetry = 250 * time.Millisecond

// Scheduler is the scheduler actor: a shell around the deterministic core
// (package core). It turns what the bus delivers into the core's inputs,
// one at a time, fires its timers, and carries out what the core sends.
type Scheduler struct {
	cfg Config
	// tracedReply is the reply subject of the submission Config.Trace
	// follows: only its reply is reported as StageReplied.
	tracedReply string
	// deposed is closed (once: deposeOnce) when another control plane
	// took the journal over: Run returns ErrDeposed.
	deposed    chan struct{}
	deposeOnce sync.Once
	log        *zap.Logger
	// refusals logs what a sender can repeat at will, once a minute.
	refusals *zap.Logger
	// cutUntil is when a partition (cutOff) ends (zero: not cut off);
	// outbox what the scheduler sent meanwhile, kept to send when it heals
	// (outboxLost past maxCutOutbox); cutDropped what reached it meanwhile
	// and was dropped.
	cutUntil time.Time
	// fenceAt and failoverAt are, under a failover-scheduler fault, when
	// the cut-off scheduler stops stepping (it fenced itself) and when the
	// standby takes over (Run returns ErrFailedOver; what it kept is never
	// sent); zero otherwise. failoverWall fires at failoverAt on a scaled
	// clock (faultEnd on a virtual one).
	fenceAt, failoverAt time.Time
	failoverWall        <-chan time.Time
	// totalsAtCut are the totals when a failover cut the scheduler off:
	// its store's last (Remains).
	totalsAtCut events.Totals
	// hungUntil is when a hang on a virtual clock ends (simulated time;
	// zero: not hung), hungMail what came meanwhile, taken up in order
	// when it wakes; faultEnd fires when the hang or the partition ends
	// (the later fault's end: armFaultEnd).
	hungUntil              time.Time
	hungMail               []*nats.Msg
	hungInputs             []core.Input
	faultEnd               simclock.Timer
	outbox                 []func() error
	outboxLost, cutDropped int
	// journalFailing is set while the journal's writes go unconfirmed
	// (failedWrite says so once), cleared by the next confirmed one.
	journalFailing atomic.Bool
	core           *core.Core
	emit           *events.Emitter
	mailbox        chan *nats.Msg
	subs           []*nats.Subscription
	// done closes when Run returns, releasing subscription callbacks
	// waiting on a full mailbox and the journal's waits.
	done chan struct{}
	// internal carries inputs posted to the loop from other goroutines
	// (the journal's outcomes).
	internal chan core.Input
	virtual  bool
	// inbox is the prefix of the reply subjects of the core's requests;
	// ctl the scheduler's control subject (chaosAsked, per message).
	inbox string
	ctl   string
	// batch holds the controls to nodes that take them batched (batch.go).
	batch *batcher
	// after are the journal's answers known by the end of a step (the
	// memory journal's confirmations, a write refused at once), for the
	// core to hear before the next input (step).
	after []core.Input
	// journal writes the core's job records (nil: no journal).
	journal recordWriter
	// held says the input being handled came with a hold on the clock (a
	// message or a virtual timer), released once it is handled: a
	// scheduler that panicked while handling it still has it (HoldsClock).
	held bool
}

// New validates the config and subscribes; Run starts the loop.
func New(cfg Config) (*Scheduler, error) {
	virtual := simclock.IsVirtual(cfg.Clock)
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Scheduler{
		cfg:      cfg,
		log:      log.With(zap.String("actor", "scheduler")),
		refusals: auth.RefusalLog(log.With(zap.String("actor", "scheduler"))),
		mailbox:  make(chan *nats.Msg, mailboxSize),
		done:     make(chan struct{}),
		deposed:  make(chan struct{}),
		internal: make(chan core.Input, 64),
		virtual:  virtual,
		inbox:    cfg.Conn.NewInbox() + ".",
		ctl:      cfg.Subjects.SchedCtl(),
		batch:    newBatcher(),
	}
	speed := 0.0
	if sc, ok := cfg.Clock.(*simclock.Scaled); ok {
		speed = sc.Speed
	}
	cc := cfg.Config
	cc.Virtual, cc.Speed, cc.Now, cc.Wall, cc.Inbox = virtual, speed, cfg.Clock.Now(), s.wallNow(), s.inbox
	cc.MaxPayload = int(cfg.Conn.MaxPayload())
	if !virtual {
		crand.Read(cc.IDSeed[:]) // never fails (crypto/rand)
	}
	if cfg.Journal != nil {
		s.journal = journal{s}
	} else if cfg.MemoryJournal != nil {
		s.journal = memoryJournal{s}
	}
	cc.Journaled = s.journal != nil
	c, err := core.New(cc)
	if err != nil {
		return nil, err
	}
	s.core = c
	s.emit = events.NewEmitter(cfg.Conn, "/scheduler/"+strconv.Itoa(c.Incarnation()))
	s.carryOut(c.Ready()) // what it asked while it started (sent batched at Run's start)
	if cfg.Journal != nil {
		ctx, cancel := context.WithTimeout(context.Background(), journalFlushTimeout)
		err := cfg.Journal.SetIncarnation(ctx, c.Incarnation())
		cancel()
		if err != nil {
			return nil, fmt.Errorf("job journal: storing the scheduler's incarnation: %w", err)
		}
		cfg.Journal.OnError(s.failedWrite)
	}
	sj := cfg.Subjects
	for _, subj := range []string{sj.AllJobRequests(), sj.AllSchedRequests(), sj.ClusterSnapshot(), sj.AllGPUEvents(), sj.AllNodeEvents(), s.inbox + "*"} {
		sub, err := cfg.Conn.Subscribe(subj, func(m *nats.Msg) {
			cfg.Clock.Hold() // released by Run once handled
			select {
			case s.mailbox <- m:
			case <-s.done:
				cfg.Clock.Release()
				s.unhandled(m)
			}
		})
		if err != nil {
			s.unsubscribe()
			return nil, err
		}
		// Nothing the scheduler hears may be dropped: the mailbox applies back-pressure.
		sub.SetPendingLimits(-1, -1)
		s.subs = append(s.subs, sub)
	}
	// The server must hold the subscriptions before a node (on another
	// connection) sends its first heartbeat: on a virtual clock a node
	// sends only one, and one lost there left a cluster that never got
	// ready (seen once in CI: "the scheduler did not hear from every GPU
	// and node").
	if err := cfg.Conn.FlushTimeout(10 * time.Second); err != nil {
		s.unsubscribe()
		return nil, fmt.Errorf("scheduler subscriptions: %w", err)
	}
	return s, nil
}

func (s *Scheduler) unsubscribe() {
	for _, sub := range s.subs {
		sub.Unsubscribe()
	}
}

// HoldsClock says whether a scheduler whose Run ended in a panic died
// holding the clock for the input it was handling: its supervisor takes
// that hold over instead of taking one of its own.
func (s *Scheduler) HoldsClock() bool { return s.held }

// Subscriptions are the scheduler's subscriptions, for a virtual clock to watch.
func (s *Scheduler) Subscriptions() []*nats.Subscription { return s.subs }

// Remains says what a dead scheduler held: its supervisor reports it in
// the down event (the queue is lost unless the journal keeps it).
func (s *Scheduler) Remains() events.SchedLifecycle {
	rem := s.core.Remains()
	if s.cutForGood() {
		// What a standby finds in the store: the totals as of the cut
		// (nothing the cut-off one did after it reached the store).
		t := s.totalsAtCut
		rem.Totals = &t
	}
	return rem
}

// step hands the core one input at the current simulated and wall time.
func (s *Scheduler) step(in core.Input) {
	if s.cfg.Fenced != nil && s.cfg.Fenced() {
		s.Depose()
		return
	}
	if s.selfFenced() {
		return // failing over: it places, stores and times out nothing more
	}
	if s.isHung() {
		// A hung scheduler runs no timer (re-armed when it wakes, from the
		// core's deadlines) and takes what comes in only when it wakes.
		if in.Timer == 0 {
			s.hungInputs = append(s.hungInputs, in)
		}
		return
	}
	in.Now, in.Wall = s.cfg.Clock.Now(), s.wallNow()
	s.carryOut(s.core.Step(in))
	// What the memory journal stored is confirmed at once, in the same
	// instant and order on every run of a seed.
	for len(s.after) > 0 {
		next := s.after[0]
		s.after = s.after[1:]
		next.Now, next.Wall = in.Now, in.Wall
		s.carryOut(s.core.Step(next))
	}
}

// wallNow is the time the core's timeouts, warm-up and rates run in: the
// wall's on a scaled clock; on a virtual one simulated time too, so that
// a call that goes unanswered (a scheduler killed and restarted, a GPU
// gone) times out at the same simulated instant in every run of a seed.
func (s *Scheduler) wallNow() time.Time {
	if s.virtual {
		return s.cfg.Clock.Now()
	}
	return time.Now()
}

// message is a bus message as the core takes it: the tenant whose
// credentials sent a request is read here, from what the server vouches
// for (auth.CallerTenant); ok is false when the request was refused.
func (s *Scheduler) message(m *nats.Msg) (*core.Msg, bool) {
	cm := &core.Msg{Subject: m.Subject, Reply: m.Reply, Data: m.Data,
		NoResponders: len(m.Data) == 0 && m.Header.Get("Status") == "503", MsgID: m.Header.Get(nats.MsgIdHdr)}
	if events.Redelivered(m) {
		// A request, heartbeat or status replayed from a stream was sent
		// by no one who may: a node's liveness, for one, must not be
		// forgeable by replaying its old heartbeats.
		s.refusals.Warn("message replayed from a stream ignored (said once a minute)", zap.String("subject", m.Subject))
		return nil, false
	}
	if s.cfg.Subjects.IsEvent(m.Subject) || strings.HasPrefix(m.Subject, s.inbox) {
		// Events and answers are not answered on their reply subject (a
		// heartbeat's lease goes to its node's lease subject).
		return cm, true
	}
	if m.Reply != "" && !s.cfg.Subjects.Answerable(m.Reply) {
		s.refusals.Warn("request whose reply subject is the cluster's own or the server's ignored (said once a minute)",
			zap.String("subject", m.Subject), zap.String("reply", m.Reply))
		return nil, false
	}
	t, err := auth.CallerTenant(m.Header, s.cfg.Tenants)
	if err != nil {
		if m.Reply != "" {
			events.Reply(m, events.ErrorReply{Error: &model.FieldError{Message: err.Error()}})
		}
		return nil, false
	}
	cm.Tenant = t
	return cm, true
}

// Run is the scheduler's loop: one message at a time, then a scheduling
// pass once the mailbox is drained and something changed. What is due
// without a message (dues: the core's deadlines, the rounds, on a virtual
// clock the pass and the metrics) has one timer, at the first of them;
// each firing steps that one, in a fixed order when several fall at one
// instant and phase. On a virtual clock the pass is due in the decide
// phase, so it runs once everything that happens at the instant has
// happened; the metrics in the observe phase; CPU-only completions,
// starvation ages, calls and leases in the event phase. On a scaled clock
// wall tickers check the calls, leases, ages and metrics instead.
func (s *Scheduler) Run(ctx context.Context) error {
	defer close(s.done)
	defer s.unsubscribe()
	var metricsWall, agingWall, leaseWall <-chan time.Time
	// Leases are checked on a wall ticker, or on a virtual clock at the
	// next lease's end (simulated time: plan).
	if l := s.core.Timing().Lease; l > 0 && !s.virtual {
		lt := time.NewTicker(l / leaseChecks)
		defer lt.Stop()
		leaseWall = lt.C
	}
	// Calls unanswered for the call timeout count as refused: checked on
	// a wall ticker, or on a virtual clock at the earliest call's
	// deadline (plan).
	var callsWall <-chan time.Time
	if !s.virtual {
		ct := time.NewTicker(max(s.core.Timing().CallTimeout/4, 10*time.Millisecond))
		defer ct.Stop()
		callsWall = ct.C
	}
	period := s.core.Timing().MetricsPeriod
	// The one timer, at the first of what is due (plan.first); each time
	// it fires, the scheduler steps that one thing and names the rest
	// again.
	var plan dues
	var due simclock.Timer
	var dueAt time.Time
	var duePhase simclock.Phase
	start := s.cfg.Clock.Now()
	plan.at[dueTraining] = s.core.Deadlines().Training
	if every := s.core.Timing().RoundEvery; every > 0 {
		// In the event phase on a virtual clock: the round's stops are
		// made before the instant's pass places the queue.
		plan.at[dueRound] = start.Add(every)
	}
	if s.virtual {
		plan.at[dueMetrics] = start.Add(period)
	} else {
		mt := time.NewTicker(period)
		defer mt.Stop()
		// aging re-runs the pass so that a waiting job that ages past the
		// starvation limit gets its hold even when nothing else happens.
		aging := time.NewTicker(250 * time.Millisecond)
		defer aging.Stop()
		metricsWall, agingWall = mt.C, aging.C
	}
	// The core's own deadlines are named after the first thing it takes.
	due, dueAt, duePhase = s.rearm(due, dueAt, duePhase, &plan)
	s.flushBatches() // what the core sent while it started
	defer func() {
		if due != nil {
			due.Stop()
		}
	}()
	for {
		if !s.virtual {
			// A partition over: what it kept goes out. On a virtual
			// clock this runs while nothing holds the clock, which may
			// have moved on by then: there each case heals as it begins
			// (a timer and a message are held until released below), so
			// what was kept goes out at the partition's end, before
			// anything sent after it, on every run of a seed.
			s.heal()
		}
		s.held = true // a message or a virtual timer: released below
		select {
		case <-ctx.Done():
			if s.cfg.Journal != nil {
				s.cfg.Journal.PutClock(s.cfg.Clock.Now())
				s.cfg.Journal.PutTotals(s.core.Totals())
				if err := s.FlushJournal(); err != nil {
					s.log.Warn("job journal: last writes unconfirmed at stop", zap.Error(err))
				}
			}
			return nil
		case <-s.deposed:
			s.held = false // nothing was taken off the mailbox
			s.log.Warn("deposed: another control plane took over the job journal; placing nothing more")
			return ErrDeposed
		case m := <-s.mailbox:
			s.heal()
			switch action, d := s.chaosAsked(m); {
			case s.isHung() && !s.isFault(m):
				// It waits, as in a hung process's buffers; a fault is taken
				// at once (as a hung GPU actor takes one). A request is
				// answered "no responders" instead: its client waits with
				// the virtual clock held, and time must move on to the
				// hang's end (the job generator tries again later).
				if s.isRequest(m) {
					s.serverNoResponders(m)
				} else {
					s.hungMail = append(s.hungMail, m)
				}
			case action != "" && s.cutForGood():
				// Failing over, it hears nothing more: a later hang or
				// cut would only move its take-over.
				events.Reply(m, events.ErrorReply{Error: model.Errorf("scheduler", "the scheduler is failing over to a standby already: it hears no fault")})
			case action == events.ChaosHang:
				if !s.hang(ctx, m, d) {
					return nil // stopped while hung
				}
			case action == events.ChaosPartition:
				s.cutOff(m, d)
			case action == events.ChaosFailoverScheduler:
				s.failOver(m)
			case s.isCut() && !s.isFault(m):
				// It never arrived (a fault does, as to a GPU actor). A
				// request's client is told "no responders", as the server
				// tells it when the only responder's connection is gone.
				s.cutDropped++
				if s.isRequest(m) {
					s.serverNoResponders(m)
				}
			default:
				s.onMail(m)
			}
			if s.core.Killed() != "" {
				for _, m := range s.hungMail {
					s.unhandled(m) // killed while hung: nobody will read what waited
				}
				s.hungMail = nil
				s.flushBatches() // what it sent before it died goes out, as unbatched it would have
				if s.virtual {
					// The supervisor takes the clock on from here: it arms
					// the restart's backoff in simulated time before it
					// lets go (cluster's superviseScheduler).
					s.cfg.Clock.Hold()
				}
				s.cfg.Clock.Release()
				return ErrKilled
			}
		case <-s.failoverWall:
			s.held = false
			s.takenOver()
			return ErrFailedOver
		case <-simclock.TimerC(s.faultEnd):
			// A hang or a partition on a virtual clock is over: what a
			// cut-off scheduler kept goes out (heal), then a hung one
			// takes up what waited, in the order it came, before any
			// timer.
			s.faultEnd = nil
			if s.failedOver() {
				s.takenOver()
				s.cfg.Clock.Hold() // the supervisor takes the clock on from here
				s.cfg.Clock.Release()
				return ErrFailedOver
			}
			s.heal()
			if s.isHung() {
				s.wake()
				if plan.at[dueTraining].IsZero() {
					plan.at[dueTraining] = s.core.Deadlines().Training
				}
				if s.core.Killed() != "" {
					s.flushBatches()
					s.cfg.Clock.Hold() // the supervisor takes the clock on from here
					s.cfg.Clock.Release()
					return ErrKilled
				}
			}
		case in := <-s.internal:
			s.heal()
			if in.Stored != "" {
				s.trace(StageStored)
			}
			s.held = false
			s.step(in)
		case <-callsWall:
			s.held = false
			s.step(core.Input{Timer: core.TimerCalls})
			s.sweepBatches()
		case <-leaseWall:
			s.held = false
			s.step(core.Input{Timer: core.TimerLease})
		case <-metricsWall:
			s.held = false
			s.step(core.Input{Timer: core.TimerMetrics})
			if s.cfg.Journal != nil && !s.cutForGood() {
				s.cfg.Journal.PutClock(s.cfg.Clock.Now())
				s.cfg.Journal.PutTotals(s.core.Totals())
			}
		case <-agingWall:
			s.held = false
			s.step(core.Input{Timer: core.TimerAging})
		case <-simclock.TimerC(due):
			s.heal()
			due, dueAt = nil, time.Time{}
			kind, _, _, _ := plan.first()
			plan.at[kind] = time.Time{}
			now := s.cfg.Clock.Now()
			switch kind {
			case dueTraining:
				if s.isHung() || s.selfFenced() {
					break // named again when it wakes
				}
				s.step(core.Input{Timer: core.TimerTraining})
				plan.at[dueTraining] = s.core.Deadlines().Training
			case dueRound:
				s.step(core.Input{Timer: core.TimerRound})
				plan.at[dueRound] = now.Add(s.core.Timing().RoundEvery)
			case dueMetrics:
				s.step(core.Input{Timer: core.TimerMetrics})
				plan.at[dueMetrics] = now.Add(period)
			default:
				s.step(core.Input{Timer: dueOrder[kind].timer})
				if kind == dueCalls {
					s.sweepBatches()
				}
			}
		}
		switch {
		case s.virtual && !s.isHung() && !s.selfFenced():
			plan.named(s.core.Deadlines(), s.core.Dirty(), s.cfg.Clock.Now())
		case s.virtual:
			plan.unnamed()
		case s.core.Dirty() && len(s.mailbox) == 0:
			s.step(core.Input{Timer: core.TimerPass})
		}
		due, dueAt, duePhase = s.rearm(due, dueAt, duePhase, &plan)
		s.flushBatches()
		if s.held {
			s.held = false
			s.cfg.Clock.Release()
		}
	}
}

// onMail hands the core one message of the mailbox.
func (s *Scheduler) onMail(m *nats.Msg) {
	if s.cfg.Trace != nil && m.Subject == s.cfg.Subjects.JobSubmit() {
		s.tracedReply = m.Reply
		s.cfg.Trace(StageSubmit)
	}
	if cm, ok := s.message(m); ok {
		if s.isBatchAnswer(cm.Subject) {
			s.batchAnswer(cm)
		} else {
			s.step(core.Input{Msg: cm})
		}
	}
}

// chaosAsked is the fault a message asks of the scheduler, and for how
// long: the chaos actions hang-scheduler, partition-scheduler and
// failover-scheduler (op chaos, action hang, partition or
// failover-scheduler, on its ctl subject); "" for any other
// message. It comes whatever the scheduler is in (hung, cut off), as a
// fault reaches a GPU actor.
func (s *Scheduler) chaosAsked(m *nats.Msg) (string, time.Duration) {
	if m.Subject != s.ctl || events.Redelivered(m) {
		return "", 0
	}
	var c events.Control
	if json.Unmarshal(m.Data, &c) != nil || c.Op != events.OpChaos || c.Chaos == nil ||
		(c.Chaos.Action != events.ChaosHang && c.Chaos.Action != events.ChaosPartition && c.Chaos.Action != events.ChaosFailoverScheduler) {
		return "", 0
	}
	return c.Chaos.Action, time.Duration(c.Chaos.DurationMS) * time.Millisecond
}

// failOver is the chaos action failover-scheduler: what a control plane
// cut off from its bus and store goes through beside a standby. It is cut
// off as by cutOff, but for good; it stops stepping a self-fence later
// (LeaderSelfFence: half a lease, from the cut), and at the take-over
// (LeaderTakeOver: three quarters) Run returns ErrFailedOver, dropping
// what it kept — a deposed leader's connection keeps nothing for after a
// reconnect — and its supervisor starts the standby from the journal. A
// scheduler that leads a store on an external bus (Config.Fenced) is
// failed over by killing or cutting off its process instead; one without
// a journal has nothing a standby could take over.
func (s *Scheduler) failOver(m *nats.Msg) {
	fail := func(msg string) {
		events.Reply(m, events.ErrorReply{Error: model.Errorf("scheduler", "%s", msg)})
	}
	switch {
	case s.cfg.Fenced != nil:
		fail("this control plane leads a store on an external bus: fail it over by killing or cutting off its process, with a standby (cluster --standby) running")
		return
	case s.cfg.Journal == nil && s.cfg.MemoryJournal == nil:
		fail("a failover needs a job journal for the standby to take over from (run with --data-dir)")
		return
	case s.isCut() || s.isHung():
		// What a cut-off scheduler stored meanwhile (its journal stays
		// reachable in a partition) was never told on the bus: a take-over
		// dropping what it kept would leave those events untold for good.
		fail("the scheduler is cut off or hung already: a failover needs one that hears the bus")
		return
	}
	lease := s.core.Timing().Lease
	if lease <= 0 {
		lease = core.DefaultLease
		if s.virtual {
			lease = core.DefaultVirtualLease
		}
	}
	take := LeaderTakeOver(lease)
	events.Reply(m, events.SchedLifecycle{Incarnation: s.core.Incarnation(), Reason: "cut off; a standby takes the control plane over in " + take.String()})
	s.flushBatches()
	now := s.faultNow()
	s.totalsAtCut = s.core.Totals()
	s.cutUntil, s.cutDropped = now.Add(take), 0
	s.fenceAt, s.failoverAt = now.Add(LeaderSelfFence(lease)), now.Add(take)
	if s.virtual {
		s.armFaultEnd(take)
	} else {
		s.failoverWall = time.After(take)
	}
	s.log.Warn("scheduler cut off for good (chaos): a standby takes over", zap.Duration("self_fence_in", LeaderSelfFence(lease)),
		zap.Duration("take_over_in", take))
}

// cutForGood says whether a failover has cut the scheduler off: from its
// store too (a control plane reaches its store over the bus), so nothing
// it writes from then on is stored.
func (s *Scheduler) cutForGood() bool { return !s.failoverAt.IsZero() }

// errStoreCutOff is a journal write of a scheduler a failover cut off.
var errStoreCutOff = errors.New("the store is unreachable: the scheduler is cut off from the bus (failover-scheduler)")

// selfFenced says whether a failing-over scheduler has fenced itself.
func (s *Scheduler) selfFenced() bool {
	return !s.fenceAt.IsZero() && !s.faultNow().Before(s.fenceAt)
}

// failedOver says whether a failover's take-over has come.
func (s *Scheduler) failedOver() bool {
	return !s.failoverAt.IsZero() && !s.faultNow().Before(s.failoverAt)
}

// takenOver ends a failed-over scheduler: what it kept while cut off is
// never sent, and what waited while it hung is never read.
func (s *Scheduler) takenOver() {
	for _, m := range s.hungMail {
		s.unhandled(m)
	}
	s.log.Warn("a standby took the control plane over: this scheduler stops; what it kept while cut off is dropped",
		zap.Int("kept", len(s.outbox)+s.outboxLost), zap.Int("missed", s.cutDropped))
	s.hungMail, s.outbox, s.outboxLost = nil, nil, 0
}

// maxCutOutbox bounds what a cut-off scheduler keeps to send when it
// heals, as a NATS client's reconnect buffer does (10,000 messages, the
// GPU actors' partition keeps as many).
const maxCutOutbox = 10000

// cutOff is the chaos action partition-scheduler: the scheduler is cut
// off from the bus for d. It keeps running — its timers fire, its leases
// lapse, it declares GPUs it no longer hears from dead and re-queues their
// jobs, as a partitioned process would — but nothing reaches it (what
// comes is dropped: it never arrived; a request is answered "no
// responders", as the server answers when the only responder's
// connection is gone) and what it sends is kept, in order, and sent
// when it heals (heal), up to maxCutOutbox. Its job journal stays
// reachable (its own connection). On a virtual clock it ends at its end in
// simulated time (faultEnd).
func (s *Scheduler) cutOff(m *nats.Msg, d time.Duration) {
	if d <= 0 {
		events.Reply(m, events.ErrorReply{Error: model.Errorf("duration", "a partition needs a positive duration")})
		return
	}
	events.Reply(m, events.SchedLifecycle{Incarnation: s.core.Incarnation(), Reason: "cut off for " + d.String()})
	s.flushBatches()
	s.cutUntil, s.cutDropped = s.faultNow().Add(d), 0
	if s.virtual {
		// Heals at its end in simulated time (faultEnd).
		s.armFaultEnd(d)
	}
	s.log.Warn("scheduler cut off from the bus (chaos)", zap.Duration("for", d))
}

// isCut says whether the scheduler is cut off from the bus now.
func (s *Scheduler) isCut() bool { return !s.cutUntil.IsZero() && s.faultNow().Before(s.cutUntil) }

// faultNow is the time a hang's or a partition's end is judged by: the
// wall's on a scaled clock, simulated time on a virtual one.
func (s *Scheduler) faultNow() time.Time {
	if s.virtual {
		return s.cfg.Clock.Now()
	}
	return time.Now()
}

// armFaultEnd arms the timer that ends a hang or a partition on a virtual
// clock after d. A later fault's end replaces an earlier one's: a
// partition that begins in a hang lengthens the hang to the partition's
// end; a hang that begins in a partition takes the partition's timer, and
// the partition heals at the first thing handled after the partition's
// end. Known and kept: ending each at its own end woke schedulers still
// cut off and exposed an order dependence
// (docs/notes/2026-12-08-scheduler-fault-ends.md).
func (s *Scheduler) armFaultEnd(d time.Duration) {
	if s.faultEnd != nil {
		s.faultEnd.Stop()
	}
	s.faultEnd = simclock.NewPhasedTimer(s.cfg.Clock, d, simclock.PhaseEvent)
}

// isFault says whether m is a chaos fault for the scheduler itself (on
// its ctl subject): taken even while it hangs.
func (s *Scheduler) isFault(m *nats.Msg) bool {
	if m.Subject != s.ctl || events.Redelivered(m) {
		return false
	}
	var c events.Control
	return json.Unmarshal(m.Data, &c) == nil && c.Op == events.OpChaos
}

// isRequest says whether m is a request someone waits on (not an event,
// nor an answer to one of the scheduler's own calls).
func (s *Scheduler) isRequest(m *nats.Msg) bool {
	return m.Reply != "" && !s.cfg.Subjects.IsEvent(m.Subject) && !strings.HasPrefix(m.Subject, s.inbox)
}

// serverNoResponders answers m as the NATS server answers a request no
// one listens to: not a send of the scheduler's (which a cut-off one
// would keep for when it heals).
func (s *Scheduler) serverNoResponders(m *nats.Msg) {
	nr := nats.NewMsg(m.Reply)
	nr.Header.Set("Status", "503")
	if err := s.cfg.Conn.PublishMsg(nr); err != nil {
		s.log.Debug("no-responders answer not sent", zap.String("subject", m.Subject), zap.Error(err))
	}
}

// isHung says whether the scheduler hangs now on a virtual clock (on a
// scaled one a hang holds the loop itself: hang).
func (s *Scheduler) isHung() bool { return !s.hungUntil.IsZero() }

// wake ends a hang on a virtual clock: what waited is taken up in the
// order it came — the messages, then what the journal confirmed — before
// any timer.
func (s *Scheduler) wake() {
	s.hungUntil = time.Time{}
	mail, inputs := s.hungMail, s.hungInputs
	s.hungMail, s.hungInputs = nil, nil
	s.log.Warn("scheduler woke from a hang", zap.Int("messages_waiting", len(mail)))
	for _, m := range mail {
		if s.core.Killed() != "" {
			s.unhandled(m) // killed by one before it: nobody reads the rest
			continue
		}
		s.onMail(m)
		s.flushBatches()
	}
	for _, in := range inputs {
		s.step(in)
	}
}

// keep holds a send of a cut-off scheduler (cutOff) to be made when it
// heals. Callers ask isCut first and build the send only then: a closure
// made for every message would cost the placement path an allocation each.
func (s *Scheduler) keep(send func() error) error {
	if len(s.outbox) < maxCutOutbox {
		s.outbox = append(s.outbox, send)
	} else {
		s.outboxLost++
	}
	return nil
}

// publish sends a message, as a request when it has a reply subject.
func (s *Scheduler) publish(subject, reply string, data []byte) error {
	if reply != "" {
		return s.cfg.Conn.PublishRequest(subject, reply, data)
	}
	return s.cfg.Conn.Publish(subject, data)
}

// heal ends a partition once it is over: what the scheduler kept is sent,
// in order, and it hears again.
func (s *Scheduler) heal() {
	if s.cutUntil.IsZero() || s.isCut() || s.cutForGood() {
		return // (a failover never heals: takenOver)
	}
	s.cutUntil = time.Time{}
	kept, lost := len(s.outbox), s.outboxLost
	for _, send := range s.outbox {
		if err := send(); err != nil {
			s.log.Debug("a message kept while cut off was not sent", zap.Error(err))
		}
	}
	s.outbox, s.outboxLost = nil, 0
	s.log.Warn("scheduler back on the bus", zap.Int("sent_kept", kept), zap.Int("lost", lost), zap.Int("missed", s.cutDropped))
}

// hang is the chaos action hang-scheduler. On a scaled clock the
// scheduler says it hangs, then does nothing for d — it reads no message
// (they wait in its mailbox and its connection's buffers, as a hung
// process's do), runs no timer and answers nothing, so its leases go
// unrenewed and its clients wait out their deadlines — and then takes up
// what waited, in the order it came, before any timer: a lease check
// taken first would judge by a view the waiting heartbeats correct. False
// when ctx ended while it hung. On a virtual clock a loop that held its
// mailbox would hold simulated time still: the hang is a state there
// (hungUntil) in which the loop takes messages without handling them
// (Run), and it ends at faultEnd (wake).
func (s *Scheduler) hang(ctx context.Context, m *nats.Msg, d time.Duration) bool {
	if d <= 0 {
		events.Reply(m, events.ErrorReply{Error: model.Errorf("duration", "a hang needs a positive duration")})
		return true
	}
	events.Reply(m, events.SchedLifecycle{Incarnation: s.core.Incarnation(), Reason: "hung for " + d.String()})
	s.flushBatches()
	if s.virtual && s.isHung() {
		// Hung already: the hang lasts until the later end.
		if end := s.faultNow().Add(d); end.After(s.hungUntil) {
			s.hungUntil = end
			s.armFaultEnd(d)
		}
		return true
	}
	if s.virtual {
		// A loop that held its mailbox would hold simulated time still:
		// on a virtual clock the loop goes on taking messages (and
		// releasing them), keeps them unhandled, runs no timer, and
		// takes them up when the hang ends (wake).
		s.hungUntil = s.faultNow().Add(d)
		s.armFaultEnd(d)
		s.log.Warn("scheduler hung (chaos)", zap.Duration("for", d))
		return true
	}
	s.log.Warn("scheduler hung (chaos)", zap.Duration("for", d))
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
	}
	s.log.Warn("scheduler woke from a hang", zap.Duration("hung", d), zap.Int("messages_waiting", len(s.mailbox)))
	for {
		select {
		case m := <-s.mailbox:
			s.onMail(m)
			s.flushBatches()
			if s.core.Killed() != "" {
				return true
			}
			continue
		default:
		}
		return true
	}
}

// rearm moves the one timer, armed at `at` in phase, to the first of
// plan (none when nothing is due), leaving it as it is when that has not
// changed.
func (s *Scheduler) rearm(t simclock.Timer, at time.Time, phase simclock.Phase, plan *dues) (simclock.Timer, time.Time, simclock.Phase) {
	_, next, nextPhase, ok := plan.first()
	switch {
	case !ok:
		if t != nil {
			t.Stop()
		}
		return nil, time.Time{}, 0
	case t != nil && next.Equal(at) && nextPhase == phase:
		return t, at, phase
	}
	return simclock.Rearm(s.cfg.Clock, t, next.Sub(s.cfg.Clock.Now()), nextPhase), next, nextPhase
}

// Drain empties the mailbox of a dead scheduler, releasing the clock for
// each message; each request in it is answered as one nobody received
// (unhandled).
func (s *Scheduler) Drain() int {
	n := 0
	for {
		select {
		case m := <-s.mailbox:
			s.cfg.Clock.Release()
			s.unhandled(m)
			n++
		default:
			return n
		}
	}
}

// unhandled answers a request the scheduler received but will never
// handle (it died first) the way NATS answers a request nobody received:
// "no responders" (status 503, no body). Nothing was done with it, so its
// client may send it again at once: the job generator does. Before, it
// went unanswered, and a client waiting without a deadline (the job
// generator) would have waited for good (by reading the code; no run
// showed it). Events and answers to the scheduler's own requests are not
// requests.
func (s *Scheduler) unhandled(m *nats.Msg) {
	if m.Reply == "" || s.cfg.Subjects.IsEvent(m.Subject) || strings.HasPrefix(m.Subject, s.inbox) {
		return
	}
	if err := s.noResponders(m.Reply); err != nil {
		s.log.Debug("no-responders answer not sent", zap.String("subject", m.Subject), zap.Error(err))
	}
}

// Unanswered are the submissions the scheduler took and has not answered
// (core.Core.Unanswered): a dead one's, for its successor to answer.
func (s *Scheduler) Unanswered() []core.Unanswered { return s.core.Unanswered() }

// FlushJournal waits until every journal write so far is stored (a dead
// scheduler's last writes, before its successor reads the journal).
func (s *Scheduler) FlushJournal() error {
	if s.cfg.Journal == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), journalFlushTimeout)
	defer cancel()
	return s.cfg.Journal.Flush(ctx)
}

// post hands the loop an input from another goroutine.
func (s *Scheduler) post(in core.Input) {
	select {
	case s.internal <- in:
	case <-s.done:
	}
}

// carryOut does what a step of the core asked, in the order it asked it:
// a control to a node that takes its controls batched waits for the next
// flush (batch.go); a cut-off scheduler keeps what it sends (keep) until
// it heals. What is kept holds its own copy of each field: the Ready's
// slice is the core's, and its next step writes over it.
func (s *Scheduler) carryOut(rd core.Ready) {
	for i := range rd.Effects {
		e := &rd.Effects[i]
		var err error
		switch e.Kind {
		case core.Send:
			if e.Batched {
				s.hold(e.Node, e.GPU, e.Reply, e.Body)
				continue
			}
			if s.isCut() {
				subject, reply, body := e.Subject, e.Reply, e.Body
				s.keep(func() error { return s.publish(subject, reply, body) })
				continue
			}
			err = s.publish(e.Subject, e.Reply, e.Body)
		case core.Emit:
			if s.isCut() {
				subject, typ, id, at, body := e.Subject, e.Type, e.ID, e.At, e.Body
				s.keep(func() error { return s.emit.EmitEncoded(subject, typ, id, at, body) })
				continue
			}
			err = s.emit.EmitEncoded(e.Subject, e.Type, e.ID, e.At, e.Body)
		case core.Answer:
			err = s.answer(e.Reply, e.Body)
		case core.NoResponders:
			err = s.noResponders(e.Reply)
		case core.Store:
			if err := s.journal.Put(e.Record, e.Confirm); err != nil && e.Confirm {
				s.after = append(s.after, core.Input{Unstored: &core.Unstored{JobID: e.Record.JobID, Why: "the job journal refused the write: " + err.Error()}})
			}
			continue
		}
		if err != nil {
			s.log.Warn("not sent", zap.String("subject", e.Subject), zap.String("reply", e.Reply), zap.Error(err))
		}
	}
}

// answer answers a request. An answer larger than this connection
// carries (the core checked Config.MaxPayload, but a reconnect may have
// found a server that takes less) is replaced by the error saying so.
func (s *Scheduler) answer(reply string, body []byte) error {
	if s.isCut() {
		return s.keep(func() error { return s.answer(reply, body) })
	}
	err := s.cfg.Conn.Publish(reply, body)
	if errors.Is(err, nats.ErrMaxPayload) {
		err = s.cfg.Conn.Publish(reply, core.TooLargeAnswer(len(body)))
	}
	if reply == s.tracedReply && reply != "" {
		s.trace(StageReplied)
	}
	return err
}

// noResponders answers a request as the NATS server answers one nobody
// received: status 503 and no body, what nats.go reads as
// ErrNoResponders.
func (s *Scheduler) noResponders(reply string) error {
	nr := nats.NewMsg(reply)
	nr.Header.Set("Status", "503")
	if s.isCut() {
		return s.keep(func() error { return s.cfg.Conn.PublishMsg(nr) })
	}
	return s.cfg.Conn.PublishMsg(nr)
}

// recordWriter is where the core's job records go: the durable journal
// or the memory one.
type recordWriter interface {
	Put(rec *durable.Record, confirm bool) error
}

// journal writes the core's records through durable.Journal.
type journal struct{ s *Scheduler }

// Put writes rec: a write to confirm steps the core with
// Stored or Unstored once the store has answered; a refused write is
// written again later.
func (w journal) Put(rec *durable.Record, confirm bool) error {
	s := w.s
	if s.cutForGood() {
		s.failedWrite(rec.JobID, errStoreCutOff)
		return errStoreCutOff
	}
	fut, err := s.cfg.Journal.Put(rec)
	if err != nil {
		s.failedWrite(rec.JobID, err)
		return err
	}
	if !confirm {
		return nil
	}
	go func() {
		select {
		case <-fut.Ok():
			if s.journalFailing.CompareAndSwap(true, false) {
				s.log.Info("job journal writes are confirmed again")
			}
			s.post(core.Input{Stored: rec.JobID})
		case err := <-fut.Err():
			if s.journalFailing.CompareAndSwap(false, true) {
				s.log.Warn("job journal writes refused by the store; each is written again until it takes it (said once)",
					zap.String("job", rec.JobID), zap.Error(err))
			}
			s.post(core.Input{Unstored: &core.Unstored{JobID: rec.JobID, Why: err.Error()}})
		case <-s.done:
		}
	}()
	return nil
}

// memoryJournal writes the core's records into the memory journal.
type memoryJournal struct{ s *Scheduler }

// Put keeps rec at once; a write to confirm is
// confirmed once the step that wrote it is done (step).
func (w memoryJournal) Put(rec *durable.Record, confirm bool) error {
	if w.s.cutForGood() {
		return nil // never reaches the store, never confirmed
	}
	w.s.cfg.MemoryJournal.Put(rec)
	if confirm {
		w.s.after = append(w.s.after, core.Input{Stored: rec.JobID})
	}
	return nil
}

// failedWrite is the journal's error handler (called from the client's
// goroutines, which must not wait for the loop): the job's record is
// written again from the loop, after a pause.
func (s *Scheduler) failedWrite(jobID string, err error) {
	if durable.IsDeposed(err) {
		s.Depose() // written again by no one: the store has a new leader
		return
	}
	// Said once while writes keep failing (a full disk fails every job's
	// write, again at every retry), then per job at debug level.
	if s.journalFailing.CompareAndSwap(false, true) {
		s.log.Warn("job journal writes unconfirmed; each is written again every "+journalRetry.String()+" until the store takes it (said once)",
			zap.String("job", jobID), zap.Error(err))
	} else {
		s.log.Debug("job journal write unconfirmed; writing it again", zap.String("job", jobID), zap.Error(err))
	}
	go s.rewriteLater(jobID)
}

// Depose stops the scheduler for good: another control plane leads the
// job journal. Safe to call from any goroutine, any number of times.
func (s *Scheduler) Depose() { s.deposeOnce.Do(func() { close(s.deposed) }) }

// rewriteLater asks the loop, after journalRetry, to write jobID's record
// again (its state then).
func (s *Scheduler) rewriteLater(jobID string) {
	select {
	case <-time.After(journalRetry):
		s.post(core.Input{Rewrite: jobID})
	case <-s.done:
	}
}
