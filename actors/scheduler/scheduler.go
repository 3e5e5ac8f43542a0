package scheduler

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/simclock"
	"github.com/gpusched/gpusched/vram"
)

// Config configures the scheduler actor.
type Config struct {
	Subjects  events.Subjects
	Conn      *nats.Conn
	Clock     simclock.Clock
	Logger    *zap.Logger
	Policy    string
	VRAMModel vram.Model
	// StarvationAge is the simulated wait after which a head-of-line job
	// holds GPUs (policy.DefaultStarvationAge when zero; negative disables).
	StarvationAge time.Duration
	// CallTimeout bounds each reserve/commit round trip (wall time).
	CallTimeout time.Duration
	// ReservationTTL is how long an uncommitted reservation lives (wall time).
	ReservationTTL time.Duration
	// MetricsPeriod is the wall-time period of metrics events.
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
}

// Defaults for Config's zero values.
const (
	DefaultCallTimeout    = time.Second
	DefaultReservationTTL = 2 * time.Second
	DefaultMetricsPeriod  = time.Second
	mailboxSize           = 4096
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
	view   *view
	jobs   map[string]*job
	order  []*job // every accepted job, in acceptance order
	queue  []*job // waiting jobs, in queue order
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
}

type counters struct {
	completed, rejected, cancelled, preemptions int
}

// New validates the config and subscribes; Run starts the loop.
func New(cfg Config) (*Scheduler, error) {
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.ReservationTTL <= 0 {
		cfg.ReservationTTL = DefaultReservationTTL
	}
	if cfg.MetricsPeriod <= 0 {
		cfg.MetricsPeriod = DefaultMetricsPeriod
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
	p, err := policy.Lookup(cfg.Policy)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Scheduler{
		cfg:     cfg,
		log:     log.With(zap.String("actor", "scheduler")),
		emit:    events.NewEmitter(cfg.Conn, "/scheduler/1"),
		mailbox: make(chan *nats.Msg, mailboxSize),
		done:    make(chan struct{}),
		policy:  p,
		view:    newView(cfg.VRAMModel, cfg.Seed, cfg.NodeRank),
		jobs:    map[string]*job{},
		classes: map[policy.ClassKey]int{},
	}
	s.view.cluster.Workload = cfg.Workload
	sj := cfg.Subjects
	for _, subj := range []string{sj.Prefix + ".job.*", sj.Prefix + ".sched.*", sj.ClusterSnapshot(), sj.AllGPUEvents(), sj.AllNodeEvents()} {
		sub, err := cfg.Conn.Subscribe(subj, func(m *nats.Msg) {
			select {
			case s.mailbox <- m:
			case <-s.done:
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

// Run is the scheduler's loop: one message at a time, then a scheduling
// pass once the mailbox is drained and something changed.
func (s *Scheduler) Run(ctx context.Context) {
	defer close(s.done)
	defer s.unsubscribe()
	metrics := time.NewTicker(s.cfg.MetricsPeriod)
	defer metrics.Stop()
	// aging re-runs the pass so that a waiting job that ages past the
	// starvation limit gets its hold even when nothing else happens.
	aging := time.NewTicker(250 * time.Millisecond)
	defer aging.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.mailbox:
			s.dispatch(m)
		case <-metrics.C:
			s.publishMetrics()
		case <-aging.C:
			s.finishCPUJobs()
			if len(s.queue) > 0 {
				s.dirty = true
			}
		}
		if s.dirty && len(s.mailbox) == 0 {
			s.schedule()
		}
	}
}

func (s *Scheduler) dispatch(m *nats.Msg) {
	p := s.cfg.Subjects.Prefix + "."
	subj := strings.TrimPrefix(m.Subject, p)
	switch {
	case strings.HasPrefix(subj, "evt.gpu."):
		s.onGPUEvent(m)
	case strings.HasPrefix(subj, "evt.node."):
		s.onNodeEvent(m)
	case subj == "job.submit":
		s.onSubmit(m)
	case subj == "job.get":
		s.onGet(m)
	case subj == "job.list":
		s.onList(m)
	case subj == "job.cancel":
		s.onCancel(m)
	case subj == "sched.strategy":
		s.onStrategy(m)
	case subj == "sched.explain":
		s.onExplain(m)
	case subj == "cluster.snapshot":
		s.onSnapshot(m)
	default:
		if m.Reply != "" {
			replyError(m, "", "unknown subject "+m.Subject)
		}
	}
}

func (s *Scheduler) onGPUEvent(m *nats.Msg) {
	tokens := strings.Split(m.Subject, ".")
	typ := tokens[len(tokens)-1]
	if typ != events.GPUStatusType && typ != events.GPUUp {
		return
	}
	var ev struct {
		SimTime time.Time        `json:"simtime"`
		Data    events.GPUStatus `json:"data"`
	}
	if err := json.Unmarshal(m.Data, &ev); err != nil {
		s.log.Warn("bad GPU event", zap.String("subject", m.Subject), zap.Error(err))
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
	n := s.view.node(hb.Node)
	cpu := model.CoresToMilli(hb.CPUTotal)
	if !n.Alive || n.CPUMilli != cpu || n.MemTotal != hb.MemoryTotal {
		s.dirty = true
	}
	n.Alive, n.CPUMilli, n.MemTotal = true, cpu, hb.MemoryTotal
	for _, g := range hb.GPUs {
		st, ok := s.view.gpus[g.GPU]
		if !ok {
			s.describe(hb.Node, g.GPU)
			continue
		}
		if st.g.Alive != g.Alive {
			st.g.Alive = g.Alive
			s.dirty = true
		}
	}
}

// describe asks a GPU actor the scheduler has not heard of for its status.
func (s *Scheduler) describe(node, gpuID string) {
	rep, err := s.call(s.cfg.Subjects.GPUCtl(node, gpuID), events.Control{Op: events.OpDescribe})
	if err != nil || rep.Status == nil {
		return
	}
	s.applyStatus(*rep.Status, s.cfg.Clock.Now())
}

func replyError(m *nats.Msg, field, msg string) {
	events.Reply(m, events.ErrorReply{Error: &model.FieldError{Field: field, Message: msg}})
}
