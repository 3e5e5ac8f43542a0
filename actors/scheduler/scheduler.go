package scheduler

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/simclock"
	"github.com/gpusched/gpusched/vram"
)

// Config configures the scheduler actor.
type Config struct {
	Subjects events.Subjects
	Conn     *nats.Conn
	Clock    simclock.Clock
	Logger   *zap.Logger
	Policy   string
	// Preempt chooses victims (policy.Preempt; policy.DefaultPreempt when
	// empty).
	Preempt string
	// Admit is admission (policy.Admit: per-tenant limits); nil admits
	// every job.
	Admit policy.Admit
	// Round names the round (policy.Round: time-slicing re-allocation;
	// policy.DefaultRound when empty) run every RoundEvery of simulated
	// time; no round when RoundEvery is zero.
	Round      string
	RoundEvery time.Duration
	// Queue is the queue order (policy.QueueSort; policy.DefaultQueue when empty).
	Queue     string
	VRAMModel vram.Model
	// StarvationAge is the simulated wait after which a head-of-line job
	// holds GPUs (policy.DefaultStarvationAge when zero; negative disables).
	StarvationAge time.Duration
	// CallTimeout bounds each reserve/commit round trip (wall time).
	CallTimeout time.Duration
	// ReservationTTL is how long an uncommitted reservation lives (wall time).
	ReservationTTL time.Duration
	// MetricsPeriod is the period of metrics events: wall time on a scaled
	// clock, simulated time on a virtual one (where the events are the
	// run's time series).
	MetricsPeriod time.Duration
	// Seed seeds the draws of the policies that draw (random) and each
	// node's tie-break rank when NodeRank does not give it.
	Seed int64
	// NodeRank gives nodes their tie-break rank under the node-scoring
	// policies (lowest wins); a node it does not name gets a rank drawn
	// from Seed and its id (a replay passes the paper's permutation).
	NodeRank map[string]int
	// Workload fixes the class distribution fragmentation is measured
	// against; nil means the classes of the jobs submitted so far.
	Workload *policy.Workload
	// DropUnschedulable rejects a job that fits nowhere at submission
	// instead of queueing it, and never preempts for it: the FGD paper's
	// replay protocol.
	DropUnschedulable bool
	// Lease is how long a GPU may go without a heartbeat renewing it
	// before the scheduler declares it dead and re-places its jobs (wall
	// time; DefaultLease when zero, negative: never). A virtual clock has
	// no leases: a run must not depend on how loaded the machine is.
	Lease time.Duration
	// Incarnation numbers this scheduler among its restarts (1 when zero):
	// it names its event source and, on a virtual clock, seeds its job ids.
	Incarnation int
	// Since, for a restarted scheduler, is when its predecessor died (wall
	// time); it starts a warm-up of one lease in which a job that fits no
	// GPU known yet is queued, not rejected: the GPUs are still reporting in.
	Since time.Time
	// Inherited are the jobs the predecessor was running when it died (its
	// supervisor's post-mortem; with a durable store, its journal). This
	// scheduler accounts for each: re-learned where a GPU still runs it,
	// completed where a GPU finished it, re-queued where a GPU lost it.
	Inherited []events.RunningJob
	// Tenants maps each tenant account of an authenticated bus to its
	// tenant (auth.File.Tenants): a request from such an account sees and
	// acts on that tenant's jobs only. Nil: no roles file; a request that
	// crossed another account's import is then refused (auth.CallerTenant).
	Tenants map[string]string
	// Journal, when set, keeps every accepted job's record in JetStream
	// (see journal.go); a submission is answered once its record is stored.
	Journal *durable.Journal
	// Restored is what the journal held when this scheduler started: its
	// jobs are put back, and it takes the incarnation after the stored one.
	Restored *durable.State
}

// Defaults for Config's zero values.
const (
	DefaultCallTimeout    = time.Second
	DefaultReservationTTL = 2 * time.Second
	DefaultMetricsPeriod  = time.Second
	// VirtualCallTimeout bounds a reserve/commit round trip on a virtual clock.
	VirtualCallTimeout = 30 * time.Second
	// DefaultVirtualMetricsPeriod samples a virtual run once a simulated minute.
	DefaultVirtualMetricsPeriod = time.Minute
	mailboxSize                 = 4096
)

// Scheduler is the scheduler actor.
type Scheduler struct {
	cfg     Config
	log     *zap.Logger
	emit    *events.Emitter
	mailbox chan *nats.Msg
	subs    []*nats.Subscription
	// done closes when Run returns, releasing subscription callbacks
	// waiting on a full mailbox.
	done chan struct{}

	policy policy.Policy
	// queueSort orders the queue (QueueSort, the queue-order extension point).
	queueSort policy.QueueSort
	// preempt chooses victims (the preemption extension point); round
	// time-slices the cluster (nil: no round).
	preempt policy.Preempt
	round   policy.Round
	view    *view
	jobs    map[string]*job
	order   []*job // every accepted job, in acceptance order
	queue   []*job // waiting jobs, in queue order
	// running is the jobs placed and not yet ended, in placement order.
	running []*job
	seq     uint64
	dirty   bool
	stats   counters
	// classes counts submitted jobs by class, for the workload when the
	// config fixes none; workloadStale says it changed since it was built.
	classes       map[policy.ClassKey]int
	workloadStale bool
	// common is the most common GPU VRAM, counted over commonFor GPUs.
	common    int64
	commonFor int
	// virtual is true on a virtual clock: decisions wait for the instant to
	// settle, and job ids come from ids (seeded) so that runs repeat.
	virtual bool
	ids     *rand.ChaCha8
	// killed is set by a kill control: Run returns ErrKilled.
	killed string
	// started is when the scheduler was made (wall time).
	started time.Time
	// inherited holds the predecessor's running jobs not accounted for
	// yet, with the placement each ran in.
	inherited map[string]string
	// placements counts this scheduler's placements, naming each.
	placements uint64
	// awaiting holds the jobs waiting for a GPU to confirm it stopped them.
	awaiting map[*job]bool
	// toStore are the jobs whose journal record changed in this handling;
	// journaled the records of jobs the journal says ran, until a GPU
	// accounts for them or shows it no longer runs them (settleJournaled).
	toStore   []*job
	journaled map[string]*durable.Record
	// nodeBeats is when each node's last heartbeat came (wall time);
	// heardGPUs the GPUs some heartbeat named, alive or not.
	nodeBeats map[string]time.Time
	heardGPUs map[string]bool
	// internal carries work posted to the loop from other goroutines.
	internal chan func()
	// inbox is the prefix (with its dot) of the reply subjects of the
	// scheduler's own requests (calls.go): their replies come through the
	// mailbox. calls
	// are those in flight by reply subject, describing the describe in
	// flight per GPU, callsTo their count per node.
	inbox      string
	calls      map[string]*call
	describing map[string]string
	callsTo    map[string]int
	nextCall   uint64
}

type counters struct {
	completed, rejected, cancelled, preemptions int
	// deaths counts GPUs declared dead or reported down; lostJobs the
	// running jobs they took down; adopted the jobs re-learned from GPUs
	// after a restart; stale the messages ignored from dead incarnations.
	deaths, lostJobs, adopted, stale int
}

// New validates the config and subscribes; Run starts the loop.
func New(cfg Config) (*Scheduler, error) {
	virtual := simclock.IsVirtual(cfg.Clock)
	// A virtual run waits out a machine too loaded to answer in a second
	// rather than decide differently because of it.
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
		if virtual {
			cfg.CallTimeout = VirtualCallTimeout
		}
	}
	if cfg.ReservationTTL <= 0 {
		cfg.ReservationTTL = DefaultReservationTTL
		if virtual {
			cfg.ReservationTTL = 2 * VirtualCallTimeout
		}
	}
	if cfg.MetricsPeriod <= 0 {
		cfg.MetricsPeriod = DefaultMetricsPeriod
		if virtual {
			cfg.MetricsPeriod = DefaultVirtualMetricsPeriod
		}
	}
	if cfg.StarvationAge == 0 {
		cfg.StarvationAge = policy.DefaultStarvationAge
	}
	if cfg.Policy == "" {
		cfg.Policy = policy.DefaultPolicy
	}
	if cfg.VRAMModel == "" {
		cfg.VRAMModel = vram.Contiguous
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Lease < 0 || virtual {
		cfg.Lease = 0
	}
	if cfg.Lease > 0 && cfg.CallTimeout > cfg.Lease/4 {
		// A call to a GPU that cannot answer must not hold the scheduler
		// (and its lease checks) for long next to the lease.
		cfg.CallTimeout = cfg.Lease / 4
	}
	if cfg.Incarnation < 1 {
		cfg.Incarnation = 1
	}
	if cfg.Restored != nil {
		// Incarnations never repeat on one journal: they name placements,
		// which GPU actors that outlive the scheduler still hold.
		cfg.Incarnation = max(cfg.Incarnation, cfg.Restored.Incarnation+1)
		if cfg.Since.IsZero() && len(cfg.Restored.Jobs) > 0 {
			cfg.Since = time.Now()
		}
	}
	if cfg.Journal != nil {
		ctx, cancel := context.WithTimeout(context.Background(), journalFlushTimeout)
		err := cfg.Journal.SetIncarnation(ctx, cfg.Incarnation)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("job journal: storing the scheduler's incarnation: %w", err)
		}
	}
	p, err := policy.Lookup(cfg.Policy)
	if err != nil {
		return nil, err
	}
	if cfg.Queue == "" {
		cfg.Queue = policy.DefaultQueue
	}
	qs, err := policy.LookupQueue(cfg.Queue)
	if err != nil {
		return nil, err
	}
	pre, err := policy.LookupPreempt(cmp.Or(cfg.Preempt, policy.DefaultPreempt))
	if err != nil {
		return nil, err
	}
	var round policy.Round
	if cfg.RoundEvery > 0 {
		if round, err = policy.LookupRound(cmp.Or(cfg.Round, policy.DefaultRound)); err != nil {
			return nil, err
		}
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Scheduler{
		cfg:        cfg,
		log:        log.With(zap.String("actor", "scheduler")),
		emit:       events.NewEmitter(cfg.Conn, "/scheduler/"+strconv.Itoa(cfg.Incarnation)),
		mailbox:    make(chan *nats.Msg, mailboxSize),
		done:       make(chan struct{}),
		policy:     p,
		queueSort:  qs,
		preempt:    pre,
		round:      round,
		view:       newView(cfg.VRAMModel, cfg.Seed, cfg.NodeRank),
		jobs:       map[string]*job{},
		classes:    map[policy.ClassKey]int{},
		virtual:    virtual,
		started:    time.Now(),
		inherited:  map[string]string{},
		awaiting:   map[*job]bool{},
		journaled:  map[string]*durable.Record{},
		nodeBeats:  map[string]time.Time{},
		heardGPUs:  map[string]bool{},
		internal:   make(chan func(), 64),
		inbox:      cfg.Conn.NewInbox() + ".",
		calls:      map[string]*call{},
		describing: map[string]string{},
		callsTo:    map[string]int{},
	}
	for _, r := range cfg.Inherited {
		s.inherited[r.JobID] = r.Placement
	}
	if virtual {
		var seed [32]byte
		binary.LittleEndian.PutUint64(seed[:], uint64(cfg.Seed))
		// A restarted scheduler draws other ids than its predecessor.
		binary.LittleEndian.PutUint64(seed[8:], uint64(cfg.Incarnation-1))
		s.ids = rand.NewChaCha8(seed)
	}
	s.view.cluster.Workload = cfg.Workload
	if cfg.Restored != nil {
		s.restore(cfg.Restored)
	}
	if cfg.Journal != nil {
		cfg.Journal.OnError(s.failedWrite)
	}
	sj := cfg.Subjects
	for _, subj := range []string{sj.AllJobRequests(), sj.Prefix + ".sched.*", sj.ClusterSnapshot(), sj.AllGPUEvents(), sj.AllNodeEvents(), s.inbox + "*"} {
		sub, err := cfg.Conn.Subscribe(subj, func(m *nats.Msg) {
			cfg.Clock.Hold() // released by Run once handled
			select {
			case s.mailbox <- m:
			case <-s.done:
				cfg.Clock.Release()
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
	return s, nil
}

func (s *Scheduler) unsubscribe() {
	for _, sub := range s.subs {
		sub.Unsubscribe()
	}
}

// Subscriptions are the scheduler's subscriptions, for a virtual clock to watch.
func (s *Scheduler) Subscriptions() []*nats.Subscription { return s.subs }

// Run is the scheduler's loop: one message at a time, then a scheduling
// pass once the mailbox is drained and something changed. On a virtual
// clock the pass is a PhaseDecide timer instead, so it runs once
// everything that happens at the instant has happened; metrics are
// PhaseObserve timers, and CPU-only completions and starvation ages are
// PhaseEvent timers at the instant they are due.
func (s *Scheduler) Run(ctx context.Context) error {
	defer close(s.done)
	defer s.unsubscribe()
	var metricsWall, agingWall, leaseWall <-chan time.Time
	if s.cfg.Lease > 0 {
		lt := time.NewTicker(s.cfg.Lease / leaseChecks)
		defer lt.Stop()
		leaseWall = lt.C
	}
	var metrics, pass, wake, round simclock.Timer
	if s.round != nil {
		// An event-phase timer: on a virtual clock the round's stops are
		// made before the instant's pass places the queue.
		round = simclock.NewPhasedTimer(s.cfg.Clock, s.cfg.RoundEvery, simclock.PhaseEvent)
	}
	var wakeAt time.Time
	if s.virtual {
		metrics = simclock.NewPhasedTimer(s.cfg.Clock, s.cfg.MetricsPeriod, simclock.PhaseObserve)
	} else {
		mt := time.NewTicker(s.cfg.MetricsPeriod)
		defer mt.Stop()
		// aging re-runs the pass so that a waiting job that ages past the
		// starvation limit gets its hold even when nothing else happens.
		aging := time.NewTicker(250 * time.Millisecond)
		defer aging.Stop()
		metricsWall, agingWall = mt.C, aging.C
	}
	defer func() {
		for _, t := range []simclock.Timer{metrics, pass, wake, round} {
			if t != nil {
				t.Stop()
			}
		}
	}()
	for {
		var metricsC, passC, wakeC, roundC <-chan time.Time
		if round != nil {
			roundC = round.C()
		}
		if metrics != nil {
			metricsC = metrics.C()
		}
		if pass != nil {
			passC = pass.C()
		}
		if wake != nil {
			wakeC = wake.C()
		}
		held := true // a message or a virtual timer: released below
		select {
		case <-ctx.Done():
			if s.cfg.Journal != nil {
				s.store()
				s.cfg.Journal.PutClock(s.cfg.Clock.Now())
				if err := s.FlushJournal(); err != nil {
					s.log.Warn("job journal: last writes unconfirmed at stop", zap.Error(err))
				}
			}
			return nil
		case m := <-s.mailbox:
			s.dispatch(m)
			if s.killed != "" {
				s.cfg.Clock.Release()
				return ErrKilled
			}
		case f := <-s.internal:
			f()
			held = false
		case <-leaseWall:
			s.expireCalls(time.Now())
			s.checkLeases()
			held = false
		case <-metricsWall:
			s.publishMetrics()
			if s.cfg.Journal != nil {
				s.cfg.Journal.PutClock(s.cfg.Clock.Now())
			}
			held = false
		case <-agingWall:
			s.settleJournaled()
			s.checkpointsReached()
			s.checkOverdue()
			s.finishCPUJobs()
			if len(s.queue) > 0 {
				s.dirty = true
			}
			held = false
		case <-roundC:
			s.runRound()
			round = simclock.NewPhasedTimer(s.cfg.Clock, s.cfg.RoundEvery, simclock.PhaseEvent)
		case <-metricsC:
			s.publishMetrics()
			metrics = simclock.NewPhasedTimer(s.cfg.Clock, s.cfg.MetricsPeriod, simclock.PhaseObserve)
		case <-wakeC:
			wake, wakeAt = nil, time.Time{}
			s.finishCPUJobs()
			if len(s.queue) > 0 {
				s.dirty = true
			}
		case <-passC:
			pass = nil
			s.schedule()
		}
		if s.virtual {
			if s.dirty && pass == nil {
				pass = simclock.NewPhasedTimer(s.cfg.Clock, 0, simclock.PhaseDecide)
			}
			if next := s.nextWake(); !next.Equal(wakeAt) {
				if wake != nil {
					wake.Stop()
					wake = nil
				}
				if wakeAt = next; !next.IsZero() {
					wake = s.cfg.Clock.NewTimer(next.Sub(s.cfg.Clock.Now()))
				}
			}
		} else if s.dirty && len(s.mailbox) == 0 {
			s.schedule()
		}
		if len(s.toStore) > 0 {
			s.store()
		}
		if held {
			s.cfg.Clock.Release()
		}
	}
}

// nextWake is the next instant something is due without a message: a
// CPU-only job's end, or a queued job reaching the starvation age (zero
// when nothing is due).
func (s *Scheduler) nextWake() time.Time {
	now := s.cfg.Clock.Now()
	var next time.Time
	earlier := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, j := range s.running {
		if j.cpuEnds != nil {
			if !j.cpuEnds.After(now) {
				return now
			}
			earlier(*j.cpuEnds)
		}
	}
	if s.cfg.StarvationAge > 0 {
		for _, j := range s.queue {
			earlier(j.submitted.Add(s.cfg.StarvationAge))
		}
	}
	return next
}

// newJobID is a random UUID, drawn from the seeded source on a virtual
// clock so that a repeated run names its jobs the same.
func (s *Scheduler) newJobID() string {
	if s.ids != nil {
		if id, err := uuid.NewRandomFromReader(s.ids); err == nil {
			return id.String()
		}
	}
	return uuid.NewString()
}

func (s *Scheduler) dispatch(m *nats.Msg) {
	// A message that trips a bug costs its own answer, not the scheduler
	// (and with it the queue).
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("message handling panicked", zap.String("subject", m.Subject), zap.Any("panic", r), zap.Stack("stack"))
			if m.Reply != "" {
				replyError(m, "", fmt.Sprintf("internal error: %v", r))
			}
		}
	}()
	if strings.HasPrefix(m.Subject, s.inbox) {
		s.onReply(m)
		return
	}
	p := s.cfg.Subjects.Prefix + "."
	subj := strings.TrimPrefix(m.Subject, p)
	// tenant is whose credentials sent a request, as the server vouches
	// (never a field of the body): "" sees every tenant.
	tenant := ""
	if !strings.HasPrefix(subj, "evt.") {
		t, err := auth.CallerTenant(m.Header, s.cfg.Tenants)
		if err != nil {
			if m.Reply != "" {
				replyError(m, "", err.Error())
			}
			return
		}
		tenant = t
		if tenant != "" && !tenantSubjects[subj] {
			// A tenant's account imports none of the others: only a
			// roles file edited by hand could bring one here.
			replyError(m, "", "tenant "+tenant+"'s credentials may not use "+m.Subject)
			return
		}
	}
	switch {
	case strings.HasPrefix(subj, "evt.gpu."):
		s.onGPUEvent(m)
	case strings.HasPrefix(subj, "evt.node."):
		s.onNodeEvent(m)
	case subj == "job.submit":
		s.onSubmit(m, tenant)
	case subj == "job.get":
		s.onGet(m, tenant)
	case subj == "job.list":
		s.onList(m, tenant)
	case subj == "job.cancel":
		s.onCancel(m, tenant)
	case subj == "sched.strategy":
		s.onStrategy(m)
	case subj == "sched.explain":
		s.onExplain(m, tenant)
	case subj == "sched.ctl":
		s.onCtl(m)
	case subj == "cluster.snapshot":
		s.onSnapshot(m, tenant)
	default:
		if m.Reply != "" {
			replyError(m, "", "unknown subject "+m.Subject)
		}
	}
}

func (s *Scheduler) onGPUEvent(m *nats.Msg) {
	node, gpu, typ, ok := events.ParseGPUEvent(m.Subject)
	if !ok || (typ != events.GPUStatusType && typ != events.GPUUp && typ != events.GPUDown) {
		return
	}
	var ev struct {
		Source  string           `json:"source"`
		SimTime time.Time        `json:"simtime"`
		Data    events.GPUStatus `json:"data"`
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
	gs, known := s.view.gpus[ev.Data.GPU]
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

func (s *Scheduler) onNodeEvent(m *nats.Msg) {
	if !strings.HasSuffix(m.Subject, ".heartbeat") {
		return
	}
	var ev struct {
		Data events.NodeHeartbeat `json:"data"`
	}
	if err := json.Unmarshal(m.Data, &ev); err != nil {
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
	hb.GPUs = slices.DeleteFunc(hb.GPUs, func(g events.HeartbeatGPU) bool {
		st, ok := s.view.gpus[g.GPU]
		return ok && st.status.Node != hb.Node
	})
	_, heard := s.nodeBeats[hb.Node]
	n := s.view.node(hb.Node)
	if !heard || !n.Alive {
		s.nodeSeen(hb, heard)
	}
	s.nodeBeats[hb.Node] = time.Now()
	cpu := model.CoresToMilli(hb.CPUTotal)
	if !n.Alive || n.CPUMilli != cpu || n.MemTotal != hb.MemoryTotal {
		n.Alive, n.CPUMilli, n.MemTotal = true, cpu, hb.MemoryTotal
		s.view.cluster.TouchNode(n)
		s.dirty = true
	}
	for _, g := range hb.GPUs {
		s.heardGPUs[g.GPU] = true
		st, ok := s.view.gpus[g.GPU]
		if !ok || g.Incarnation > st.status.Incarnation {
			// Unknown, or restarted without this scheduler hearing its up:
			// asked once it answers its node, without waiting (calls.go).
			if g.Alive {
				s.describe(hb.Node, g.GPU)
			}
			continue
		}
		if g.Alive && (g.Incarnation != st.status.Incarnation || g.Incarnation <= st.dead) {
			continue // a dead incarnation is not revived by its node's word
		}
		// On a virtual clock a missed ping measures the machine's load, not
		// the simulated cluster, so it must not change a decision: a run
		// would then depend on how loaded the machine was. Not alive here is
		// "suspect": nothing new goes there; only the lease declares death.
		if st.g.Alive != g.Alive && (g.Alive || !s.virtual) {
			st.g.Alive = g.Alive
			s.view.cluster.Touch(st.g)
			s.dirty = true
		}
	}
	s.grantLeases(m, hb)
}

// tenantSubjects are the request subjects (without the prefix) a tenant's
// account imports: auth.TenantServices.
var tenantSubjects = map[string]bool{"job.submit": true, "job.cancel": true, "job.get": true, "job.list": true,
	"sched.explain": true, "cluster.snapshot": true}

func replyError(m *nats.Msg, field, msg string) {
	events.Reply(m, events.ErrorReply{Error: &model.FieldError{Field: field, Message: msg}})
}
