package core

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/policy"
)

// Msg is a message from the bus.
type Msg struct {
	Subject string
	// Reply is the subject to answer on ("" for a plain publish).
	Reply string
	Data  []byte
	// Tenant is the tenant whose credentials sent a request, as the server
	// vouches (the shell reads it; never a field of the body): "" sees
	// every tenant.
	Tenant string
	// NoResponders marks the server's answer to a request nobody received.
	NoResponders bool
	// MsgID is the request's Nats-Msg-Id header: a submission's
	// idempotency key when its body names no job_id (as JetStream reads
	// it: the same id within DedupeWindow is the same submission).
	MsgID string
}

// Timer names a timer of the shell's that fired.
type Timer int

// The shell's timers.
const (
	NoTimer Timer = iota
	// TimerPass runs a scheduling pass (when Dirty).
	TimerPass
	// TimerWake is the instant NextWake asked for.
	TimerWake
	// TimerRound runs the Round in force.
	TimerRound
	// TimerMetrics publishes a metrics event.
	TimerMetrics
	// TimerLease checks leases and expires calls (wall time).
	TimerLease
	// TimerCalls times out the calls unanswered for CallTimeout (wall time).
	TimerCalls
	// TimerAging re-runs what is due by wall time on a scaled clock:
	// journal settling, checkpoints, overdue jobs, CPU-only completions.
	TimerAging
	// TimerTraining runs the training round (TrainingRoundAt).
	TimerTraining
	// TimerReplay runs the replayed round due (ReplayRoundAt; virtual
	// clock).
	TimerReplay
)

// Input is one step's input: a message, a timer, or a journal outcome,
// with the simulated and wall time at which it is handled.
type Input struct {
	Now, Wall time.Time
	Msg       *Msg
	Timer     Timer
	// Rewrite names a job whose journal write failed: its record is
	// written again.
	Rewrite string
	// Stored names a job whose first record the store has (Store.Put with
	// confirm), Unstored one whose first record it refused.
	Stored   string
	Unstored *Unstored
}

// Unstored is a submission the store refused: the job is cancelled (it
// never ran) and the client told.
type Unstored struct {
	JobID, Why string
}

// instant is the time a step is at: simulated (now) and wall (the
// shell's clock; simulated time on a virtual clock). The parts that act
// later (what follows a stop) read it when they act.
type instant struct{ now, wall time.Time }

// Core is the scheduler's deterministic core.
type Core struct {
	cfg Config
	log *zap.Logger
	// out gathers what the core asks until the shell takes it (Ready).
	out *outbox
	// instant is the time the step is at (Step's input).
	instant

	// plugins are the extensions in force and the one place they run
	// (policy.Profile: queue order, admission, filters, placement,
	// preemption, round).
	plugins *policy.Profile
	// life moves jobs from state to state and says so (lifecycle.go).
	life *lifecycle
	// training is the state of training jobs (nil: none run here).
	training *training
	// replay is the state of the replayed rounds (nil: none run here).
	replay *replayRounds
	view   *view
	jobs   map[string]*job
	order  *jobOrder  // every accepted job, in acceptance order
	queue  *waitQueue // the jobs waiting for a placement (queue.go)
	// running is the jobs placed and not yet ended (running.go).
	running *runningJobs
	dirty   bool
	// stats are the running totals: this scheduler's counts and what its
	// predecessors' came to (totals.go).
	stats *totals
	// classes counts the submitted jobs by class, for the workload when
	// the config fixes none (workload.go).
	classes *jobClasses
	// intake takes submissions in (intake.go).
	intake *intake
	// killed is set by a kill control: the shell stops the core.
	killed string
	// restart is what this scheduler owes its predecessor's work
	// (restart.go).
	restart *restart
	// recovery takes back the predecessor's work (recovery.go).
	recovery *recovery
	// unconfirmed are the jobs waiting for a GPU to confirm it stopped
	// them (stopwaits.go).
	unconfirmed *stopWaits
	// writes are the journal records the step changed, and whether the
	// store takes writes (journalwrites.go).
	writes *journalWrites
	// answer answers the requests that read (answers.go).
	answer *answers
	// nodes are what the nodes' heartbeats said (nodes.go).
	nodes *nodeRegistry
	// live says which GPUs and nodes are alive: their leases, and the
	// GPUs to read again (liveness.go).
	live *liveness
	// calls are the core's requests in flight (calltracker.go).
	calls *callTracker
	// place places jobs: the pass, the attempts, the placements in flight
	// (place.go, negotiate.go).
	place *placer
	// stops are the stops in flight (stops.go).
	stops *stops
}

// New applies the config's defaults and makes the core; what it asks
// while it starts is in its first Ready.
func New(cfg Config) (*Core, error) {
	cfg = withDefaults(cfg)
	virtual := cfg.Virtual
	plugins, err := policy.NewProfile(policy.ProfileConfig{Placement: cfg.Policy, Queue: cfg.Queue, Filters: cfg.Filters,
		Preempt: cfg.Preempt, Round: cfg.Round, Admit: cfg.Admit, Rounds: cfg.RoundEvery > 0})
	if err != nil {
		return nil, err
	}
	if err := policy.CheckOversubscribe(cmp.Or(cfg.Oversubscribe, 1)); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Core{
		cfg: cfg,
		restart: &restart{started: cfg.Wall, lease: cmp.Or(max(cfg.Lease, 0), DefaultLease), warms: !cfg.Since.IsZero(),
			unanswered: slices.Clone(cfg.Unanswered), inherited: map[string]string{}, journaled: map[string]*durable.Record{}},
		log:      log.With(zap.String("actor", "scheduler")),
		instant:  instant{now: cfg.Now, wall: cfg.Wall},
		plugins:  plugins,
		training: newTraining(cfg.Training),
		replay:   newReplayRounds(cfg.Replay),
		view:     newView(cfg.VRAMModel, cfg.Seed, cfg.NodeRank),
		jobs:     map[string]*job{},
		order:    &jobOrder{},
		stats:    &totals{},
		running:  newRunningJobs(),
		classes:  newJobClasses(cfg.Workload != nil),
		nodes:    newNodeRegistry(cfg.NodeGPUs, cfg.NodeMaxGPUs),
		calls:    newCallTracker(cfg.Inbox, cfg.CallTimeout),
		queue:    newWaitQueue(),
		writes:   &journalWrites{journaled: cfg.Journaled},
	}
	seed := cfg.IDSeed
	if virtual || seed == [32]byte{} {
		// A seeded run names its jobs the same every time; a restarted
		// scheduler draws other ids than its predecessor.
		seed = [32]byte{}
		binary.LittleEndian.PutUint64(seed[:], uint64(cfg.Seed))
		binary.LittleEndian.PutUint64(seed[8:], uint64(cfg.Incarnation-1))
	}
	connect(s, cfg, rand.NewChaCha8(seed))
	for _, r := range cfg.Inherited {
		if c := r.CPUOnly; c != nil {
			// No GPU knows it: resumed from the predecessor's account.
			started, ends := c.Started, c.Ends
			s.recovery.resumeCPUJob(&durable.Record{JobID: r.JobID, Spec: c.Spec, Seq: c.Seq, Submitted: c.Submitted, State: stateRunning,
				Placement: r.Placement, Node: c.Node, Started: &started, CPUEnds: &ends})
			continue
		}
		s.restart.inherited[r.JobID] = r.Placement
	}
	s.view.cluster.Workload = cfg.Workload
	s.view.cluster.Throughputs = cfg.Throughputs
	s.view.cluster.Oversubscribe = cmp.Or(cfg.Oversubscribe, 1)
	plugins.Apply(&s.view.cluster)
	if cfg.Restored != nil {
		s.recovery.restore(cfg.Restored)
	}
	s.stats.carry(cfg.Restored, cfg.Carried)
	return s, nil
}

// Totals are the running totals as reported (metrics): the carried ones
// plus this scheduler's own.
func (s *Core) Totals() events.Totals { return s.stats.totals() }

// Step handles one input, then writes the journal records it changed, and
// returns what it asks of the world (Ready): the shell carries that out
// before it steps the core again.
func (s *Core) Step(in Input) Ready {
	if !in.Now.IsZero() {
		s.now = in.Now
	}
	if !in.Wall.IsZero() {
		s.wall = in.Wall
	}
	if s.restart.restoredNews != nil {
		s.restart.announceRestored(s.out, s.cfg.Subjects, s.now)
	}
	if s.restart.unanswered != nil {
		s.restart.answerPredecessors(s.jobs, s.out, s.log)
	}
	switch {
	case in.Msg != nil:
		s.dispatch(in.Msg)
	case in.Rewrite != "":
		if j, ok := s.jobs[in.Rewrite]; ok {
			s.writes.touch(j)
		}
	case in.Stored != "":
		if j, ok := s.jobs[in.Stored]; ok {
			s.intake.stored(j)
		}
	case in.Unstored != nil:
		if j, ok := s.jobs[in.Unstored.JobID]; ok {
			s.intake.unstored(j, in.Unstored.Why)
		}
	}
	switch in.Timer {
	case TimerPass:
		if s.cfg.Virtual {
			// No aging ticker on a virtual clock: the journal's jobs are
			// settled as the GPUs that ran them are read (each read makes
			// a pass) and at the wake two leases in (NextWake).
			s.recovery.settleJournaled()
		}
		s.place.settleNow()
		s.place.schedule()
	case TimerWake:
		s.finishCPUJobs()
		if s.cfg.Virtual {
			// No aging ticker on a virtual clock.
			s.live.askOverdue(s.running, s.wall, s.now, s.describe)
			s.live.askAwaiting(s.unconfirmed, s.wall, s.describe)
			s.recovery.settleJournaled()
		}
		if s.queue.len() > 0 {
			s.dirty = true
		}
	case TimerRound:
		s.place.runRound()
	case TimerTraining:
		s.training.runRound()
	case TimerReplay:
		s.replay.runRound()
	case TimerMetrics:
		s.answer.publishMetrics()
	case TimerLease:
		s.expireCalls(s.wall)
		s.checkLeases()
	case TimerCalls:
		s.expireCalls(s.wall)
	case TimerAging:
		s.recovery.settleJournaled()
		checkpointsReached(s.running, s.writes, s.cfg.Journaled, s.now)
		s.live.askOverdue(s.running, s.wall, s.now, s.describe)
		s.live.askAwaiting(s.unconfirmed, s.wall, s.describe)
		s.finishCPUJobs()
		if s.queue.len() > 0 {
			s.dirty = true
		}
	}
	if s.writes.owed() {
		s.store()
	}
	return s.Ready()
}

// Dirty reports whether something changed since the last pass and no
// pass or placement is under way: the shell runs one (TimerPass).
func (s *Core) Dirty() bool {
	if s.place.settleWaits() {
		return true // a pass or an attempt waits to go on (virtual clock)
	}
	return s.dirty && s.place.idle()
}

// Killed is the reason a kill control gave ("" while alive): the shell
// stops the core.
func (s *Core) Killed() string { return s.killed }

// Incarnation is the core's incarnation (after the config's defaults and
// the journal's).
func (s *Core) Incarnation() int { return s.cfg.Incarnation }

func (s *Core) dispatch(m *Msg) {
	// A message that trips a bug costs its own answer, not the scheduler
	// (and with it the queue).
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("message handling panicked", zap.String("subject", m.Subject), zap.Any("panic", r), zap.Stack("stack"))
			if m.Reply != "" {
				s.out.replyError(m, "", fmt.Sprintf("internal error: %v", r))
			}
		}
	}()
	if s.calls.isReply(m.Subject) {
		s.onReply(m)
		return
	}
	sj := s.cfg.Subjects
	switch {
	case sj.IsGPUEvent(m.Subject):
		s.onGPUEvent(m)
		return
	case sj.IsNodeEvent(m.Subject):
		s.onNodeEvent(m)
		return
	case sj.IsEvent(m.Subject):
		if m.Reply != "" {
			s.out.replyError(m, "", "unknown subject "+m.Subject)
		}
		return
	}
	// m.Tenant is whose credentials sent a request, as the server vouches
	// (the shell reads it; never a field of the body): "" sees every tenant.
	svc, known := sj.ParseService(m.Subject)
	tenant := m.Tenant
	if tenant != "" && !svc.ForTenants() {
		// A tenant's account imports none of the others: only a roles
		// file edited by hand could bring one here.
		s.out.replyError(m, "", "tenant "+tenant+"'s credentials may not use "+m.Subject)
		return
	}
	if !known {
		if m.Reply != "" {
			s.out.replyError(m, "", "unknown subject "+m.Subject)
		}
		return
	}
	switch svc {
	case events.ServiceJobSubmit:
		s.intake.submit(m, tenant)
	case events.ServiceJobGet:
		s.answer.get(m, tenant)
	case events.ServiceJobList:
		s.answer.list(m, tenant)
	case events.ServiceJobCancel:
		s.onCancel(m, tenant)
	case events.ServiceSchedStrategy:
		s.onStrategy(m)
	case events.ServiceSchedExplain:
		s.answer.explain(m, tenant)
	case events.ServiceSchedCtl:
		s.onCtl(m)
	case events.ServiceClusterSnapshot:
		s.answer.snapshot(m, tenant)
	}
}

func (s *Core) onGPUEvent(m *Msg) {
	node, gpu, typ, ok := events.ParseGPUEvent(m.Subject)
	if !ok || (typ != events.GPUStatusType && typ != events.GPUUp && typ != events.GPUDown) {
		return
	}
	var ev events.Envelope[events.GPUStatus]
	// The subject's GPU; once the body is checked to name the same
	// (validStatus), the one it speaks of.
	gs, known := s.view.gpus[gpu]
	if known && len(gs.status.Jobs) > 0 {
		// Room for the jobs the GPU had and one more (a status changes
		// them by one, mostly), allocated once: the decoder fills a slice
		// in place up to its capacity, and from nothing grows it 4, 8, 16,
		// 32 — for a binpacked GPU's 20 jobs three times the bytes. In a
		// 100,000-GPU run that growth was a tenth of all the process
		// allocated (docs/notes/2026-12-07-large-cluster-gc.md).
		ev.Data.Jobs = make([]events.GPUJob, 0, len(gs.status.Jobs)+1)
	}
	if err := gojson.Unmarshal(m.Data, &ev); err != nil {
		s.log.Warn("bad GPU event dropped", zap.String("subject", m.Subject), zap.Error(err))
		return
	}
	if fe := validStatus(node, gpu, ev.Data); fe != nil {
		s.log.Warn("bad GPU event dropped", zap.String("subject", m.Subject), zap.String("field", fe.Field), zap.String("reason", fe.Message))
		return
	}
	if strings.HasPrefix(ev.Source, "/scheduler/") {
		return // this scheduler's own verdict (or a predecessor's)
	}
	if !events.SpeaksFor(node, gpu) {
		s.log.Warn("GPU event dropped: the GPU's id names another node as its owner", zap.String("subject", m.Subject),
			zap.String("owner", events.GPUOwner(gpu)))
		return
	}
	if known && gs.status.Node != ev.Data.Node {
		// The subject's node is what the server vouched for (a node's
		// credentials publish only under its own): a node does not speak
		// for another node's GPU.
		s.log.Warn("GPU event dropped: the GPU is another node's", zap.String("subject", m.Subject), zap.String("node", gs.status.Node))
		return
	}
	if known && (ev.Data.Incarnation < gs.status.Incarnation || ev.Data.Incarnation <= gs.dead) {
		// A message from a dead incarnation (a hung actor waking, a
		// partition's backlog, a delay line): the GPU has moved on.
		s.stats.stale++
		s.log.Debug("stale GPU event ignored", zap.String("subject", m.Subject), zap.Int("incarnation", ev.Data.Incarnation),
			zap.Int("current", gs.status.Incarnation), zap.Int("dead", gs.dead))
		return
	}
	if typ == events.GPUDown {
		s.gpuDown(ev.Data)
		return
	}
	s.applyStatus(ev.Data, ev.SimTime)
}

func (s *Core) onNodeEvent(m *Msg) {
	if !strings.HasSuffix(m.Subject, ".heartbeat") {
		return
	}
	var ev events.DataOf[events.NodeHeartbeat]
	if err := gojson.Unmarshal(m.Data, &ev); err != nil {
		s.log.Warn("bad node event", zap.String("subject", m.Subject), zap.Error(err))
		return
	}
	hb := ev.Data
	if len(hb.GPUs) > MaxHeartbeatGPUs {
		s.log.Warn("node heartbeat dropped: it names too many GPUs", zap.String("subject", m.Subject), zap.Int("gpus", len(hb.GPUs)),
			zap.Int("max", MaxHeartbeatGPUs))
		return
	}
	// <p>.evt.node.<node>.heartbeat: the subject is what the server's
	// permissions vouch for (a node's credentials publish only its own),
	// so a heartbeat speaks for the node its subject names and no other.
	if hb.Node == "" || events.HeartbeatNode(m.Subject) != hb.Node {
		s.log.Warn("bad node event dropped: its node is not its subject's", zap.String("subject", m.Subject), zap.String("node", hb.Node))
		return
	}
	ask, changed := s.live.heartbeat(&hb, s.wall, s.now)
	if changed {
		s.dirty = true
	}
	beat := hb.Beat
	if m.Reply == "" {
		beat = 0 // a heartbeat that asks for no lease
	}
	// This heartbeat says what the node's GPUs are now: describes still
	// waiting for a slot from an earlier one are its to ask, or not.
	s.calls.forgetWaiting(hb.Node)
	for _, gpu := range s.calls.order(ask) {
		s.describeAfter(hb.Node, gpu, beat)
	}
	s.live.grant(m, hb, s.wall, s.now)
}

// newJobID is a random UUID drawn from ids, the core's seeded source (see
// Config.IDSeed).
func newJobID(ids *rand.ChaCha8) string {
	id, err := uuid.NewRandomFromReader(ids)
	if err != nil {
		panic(err) // ChaCha8 never fails to read
	}
	return id.String()
}

// Deadlines are the instants the core has something due without a
// message (zero: nothing), for the shell to arm its timers by: on a
// virtual clock it steps the matching Timer then; on a scaled clock its
// wall tickers check the calls and leases, and only Training is armed.
type Deadlines struct {
	// Calls is when the earliest call in flight times out (the core's wall
	// time): TimerCalls.
	Calls time.Time
	// Wake is the next instant something is due without a message (a
	// CPU-only job's end, a queued job reaching the starvation age, a
	// restart's grace, a job overdue): TimerWake.
	Wake time.Time
	// Lease is when the next lease runs out (a GPU's, or a node's
	// heartbeats'): TimerLease.
	Lease time.Time
	// Replay is the next replayed round (TimerReplay, in the decide
	// phase); Training the next training round (TimerTraining).
	Replay, Training time.Time
}

// Deadlines are what is due next (Deadlines).
func (s *Core) Deadlines() Deadlines {
	return Deadlines{Calls: s.calls.deadline(), Wake: s.nextWake(), Lease: s.live.deadline(), Replay: s.replay.dueAt(),
		Training: s.training.nextRound(s.now)}
}

// Timing is the config's periods in force, after its defaults: the
// shell's tickers and timers run on them.
type Timing struct {
	// Lease is the GPUs' lease (zero: none); CallTimeout how long the
	// core waits for an answer (TimerCalls); MetricsPeriod the period of
	// metrics events (TimerMetrics); RoundEvery the period of the Round
	// in force (zero: no round).
	Lease, CallTimeout, MetricsPeriod, RoundEvery time.Duration
}

// Timing is the periods in force (Timing).
func (s *Core) Timing() Timing {
	t := Timing{Lease: s.cfg.Lease, CallTimeout: s.cfg.CallTimeout, MetricsPeriod: s.cfg.MetricsPeriod}
	if s.plugins.Round != nil {
		t.RoundEvery = s.cfg.RoundEvery
	}
	return t
}

// nextWake is the next instant something is due without a message: a
// CPU-only job's end, or a queued job reaching the starvation age (zero
// when nothing is due).
func (s *Core) nextWake() time.Time {
	now := s.now
	var next time.Time
	earlier := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, j := range s.running.list {
		if j.cpuEnds != nil {
			if !j.cpuEnds.After(now) {
				return now
			}
			earlier(*j.cpuEnds)
		}
	}
	if s.cfg.StarvationAge > 0 {
		earlier(s.queue.nextAged(now, s.cfg.StarvationAge))
	}
	if s.cfg.Virtual && s.restart.owes() {
		// The journal's jobs whose GPUs no heartbeat names are settled
		// once those GPUs count as gone (settleJournaled); the hold on
		// placements ends a lease after the restart (resumingJobs).
		earlier(s.restart.started.Add(s.restart.grace() + time.Nanosecond))
		earlier(s.restart.started.Add(s.restart.lease + time.Nanosecond))
	}
	if s.cfg.Virtual {
		s.unconfirmed.nextAsk(earlier) // askAwaiting
	}
	if end, ok := s.restart.warmUpEnds(); ok && s.cfg.Virtual && end.After(now) && slices.ContainsFunc(s.queue.jobs, func(j *job) bool { return j.unchecked }) {
		// A job taken during the warm-up is judged against the cluster by
		// the first pass after it; on a quiet virtual clock nothing else
		// may make one, and a job that fits no GPU would wait for good.
		// Virtual time is the core's wall time there.
		earlier(end)
	}
	if s.cfg.Virtual {
		// A job still running past its end is looked for on its GPUs
		// (liveness.askOverdue): its completion may have been dropped. Its wake
		// comes a grace after the end, so that a completion on time never
		// costs an instant of its own.
		for _, j := range s.running.list {
			if at, ok := j.overdueBy(); ok {
				if at.Before(j.overdueAt) {
					at = j.overdueAt // read already: again after the grace
				}
				earlier(at)
			}
		}
	}
	return next
}

// onCtl answers <p>.sched.ctl: kill crashes the scheduler (chaos);
// store-down and store-up say whether the job journal's store can take
// writes (the control plane's store watch).
func (s *Core) onCtl(m *Msg) bool {
	var c events.Control
	if !s.out.decodeRequest(m, &c) {
		return false
	}
	switch c.Op {
	case events.OpStoreDown:
		if s.writes.down == "" {
			s.log.Warn("the job journal's store cannot take writes: submissions are refused until it can", zap.String("reason", c.Reason))
		}
		s.writes.down = cmp.Or(c.Reason, "the store cannot take writes")
		return false
	case events.OpStoreUp:
		if s.writes.down != "" {
			s.log.Info("the job journal's store takes writes again")
		}
		s.writes.down = ""
		return false
	case events.OpKill:
	default:
		s.out.replyError(m, "op", "unknown operation "+strconv.Quote(c.Op)+" (the scheduler's control knows kill, store-down and store-up)")
		return false
	}
	reason := c.Reason
	if reason == "" {
		reason = "killed"
	}
	s.killed = reason
	s.out.reply(m, events.SchedLifecycle{Incarnation: s.cfg.Incarnation, Reason: reason,
		Queued: queued(s.queue, s.training, s.jobs), Running: s.running.len(), Policy: s.plugins.Placement.Name(), Queue: s.plugins.QueueSort.Name(), Durable: s.cfg.Journaled})
	return true
}

// Remains says what a dead scheduler held: its supervisor reports it in
// the down event (the queue is lost unless the journal keeps it).
func (s *Core) Remains() events.SchedLifecycle {
	s.answer.metrics() // brings the energy up to now
	t := s.Totals()
	r := events.SchedLifecycle{Incarnation: s.cfg.Incarnation, Reason: s.killed, Queued: queued(s.queue, s.training, s.jobs),
		Running: s.running.len(), Policy: s.plugins.Placement.Name(), Queue: s.plugins.QueueSort.Name(), Durable: s.cfg.Journaled, Totals: &t}
	for _, j := range s.running.list {
		rj := events.RunningJob{JobID: j.id, Placement: j.placement}
		if j.cpuEnds != nil && j.node != "" {
			rj.CPUOnly = &events.CPUOnlyJob{Spec: j.spec, Seq: j.seq, Submitted: j.submitted, Node: j.node, Ends: *j.cpuEnds}
			if j.started != nil {
				rj.CPUOnly.Started = *j.started
			}
		}
		r.RunningJobs = append(r.RunningJobs, rj)
	}
	for id, p := range s.restart.inherited {
		if _, known := s.jobs[id]; !known {
			r.RunningJobs = append(r.RunningJobs, events.RunningJob{JobID: id, Placement: p})
		}
	}
	for _, v := range s.stops.victims() {
		// A victim whose stop is unanswered is still on its GPU as far as
		// anyone knows (a hung GPU never took the stop): the successor
		// accounts for it like a running job — re-learned where it still
		// runs, re-queued where its GPU stopped or lost it. A release
		// (a cancel) is not: the job is over.
		r.RunningJobs = append(r.RunningJobs, events.RunningJob{JobID: v.id, Placement: v.placement})
	}
	slices.SortFunc(r.RunningJobs, func(a, b events.RunningJob) int { return strings.Compare(a.JobID, b.JobID) })
	if !r.Durable {
		carried := map[string]bool{}
		for _, rj := range r.RunningJobs {
			carried[rj.JobID] = true
		}
		for id, j := range s.jobs {
			if !j.terminal() && !carried[id] {
				r.LostJobs = append(r.LostJobs, id)
			}
		}
		slices.Sort(r.LostJobs)
	}
	return r
}
