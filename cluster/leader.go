package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/scheduler"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
)

// Leadership of the control plane. On an external bus with a store, the
// control plane that schedules holds the job journal's leadership
// (durable.Journal.Lead): a compare-and-set of a key whose revision every
// write of its journal is fenced on, so that once another control plane
// has taken the store over, the store itself refuses every write of the
// first — a record, a commit's precondition — and a deposed scheduler can
// place nothing (a job runs only once its record is stored). The leader
// renews an alive mark every sixth of a lease; a standby (`cluster
// --standby`) that sees none for three quarters of a lease takes the
// store over, reads the
// journal and starts its scheduler as a restarted one would. A leader that
// cannot renew for half a lease stops placing by itself,
// before any standby may take over.

// leading says whether this process leads now (set while its scheduler
// runs under a leadership).
type leading struct {
	// id tells this control plane from any other (in the leadership key
	// and its supervisor's event source).
	id string
	on atomic.Bool
	// until is when this process's leadership lapses unless renewed
	// (Unix nanoseconds, wall; 0: not leading): every step of its
	// scheduler asks (scheduler.Config.Fenced).
	until atomic.Int64
}

// fenced says whether the leadership lapsed: a scheduler must step no more.
func (l *leading) fenced() bool { return time.Now().UnixNano() > l.until.Load() }

// hold records a leadership confirmed as of sent: it lasts
// scheduler.LeaderSelfFence.
func (l *leading) hold(sent time.Time, lease time.Duration) {
	l.until.Store(sent.Add(scheduler.LeaderSelfFence(lease)).UnixNano())
}

// leads reports whether the cluster takes part in leadership: an
// external bus (a standby elsewhere can reach the store) and a journal.
func (c *Cluster) leads() bool { return c.cfg.Bus.URLs != "" && c.journal != nil }

// holder names this control plane in the leadership key.
func (c *Cluster) holder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), c.leader.id)
}

// lead supervises this process's scheduler while it leads, renewing the
// leadership; deposed (or fenced by itself), it stands by, and leads again
// when it takes the store over. It returns when ctx ends.
func (c *Cluster) lead(ctx context.Context, cfg scheduler.Config, s *scheduler.Scheduler, lease time.Duration) {
	log := c.cfg.Logger.With(zap.String("actor", "leadership"))
	for {
		c.leader.on.Store(true)
		c.leader.hold(time.Now(), lease) // it has just led, or taken the store over
		termCtx, endTerm := context.WithCancel(ctx)
		renewed := make(chan struct{})
		go func() {
			defer close(renewed)
			c.renew(termCtx, s, lease, log)
		}()
		err := c.superviseScheduler(termCtx, cfg, s)
		endTerm()
		<-renewed
		if ctx.Err() != nil {
			return // stopped while leading: Stop marks the store stopped
		}
		c.leader.on.Store(false)
		log.Warn("no longer leading the control plane: standing by", zap.Error(err))
		var ok bool
		if cfg, s, ok = c.standBy(ctx, cfg, lease, log); !ok {
			return
		}
	}
}

// renew renews the leadership every scheduler.LeaderRenewEvery until ctx
// ends; deposed, or unable to renew for scheduler.LeaderSelfFence, it
// deposes s.
func (c *Cluster) renew(ctx context.Context, s *scheduler.Scheduler, lease time.Duration, log *zap.Logger) {
	t := time.NewTicker(scheduler.LeaderRenewEvery(lease))
	defer t.Stop()
	last := time.Now()
	failing := false
	for {
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, scheduler.LeaderRenewEvery(lease))
		err := c.journal.Renew(rctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			last = sent
			c.leader.hold(sent, lease)
			if failing {
				log.Info("leadership renewed again")
				failing = false
			}
		case durable.IsDeposed(err):
			log.Warn("another control plane took over the job journal")
			c.leader.until.Store(0)
			s.Depose()
			return
		default:
			if !failing {
				log.Warn("leadership not renewed; retrying", zap.Error(err))
				failing = true
			}
			if time.Since(last) >= scheduler.LeaderSelfFence(lease) {
				log.Warn("leadership unrenewed for half a lease: placing nothing more, as a standby may soon take over",
					zap.Duration("since", time.Since(last)))
				c.leader.until.Store(0)
				s.Depose()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// standBy waits until the leader has renewed nothing for
// scheduler.LeaderTakeOver, takes
// the store over, and returns the scheduler it started from the journal;
// false when ctx ended first.
func (c *Cluster) standBy(ctx context.Context, cfg scheduler.Config, lease time.Duration, log *zap.Logger) (scheduler.Config, *scheduler.Scheduler, bool) {
	marks, err := c.journal.AliveMarks(ctx)
	for err != nil {
		log.Error("watching the leader's renewals; retrying", zap.Error(err))
		select {
		case <-ctx.Done():
			return cfg, nil, false
		case <-time.After(time.Second):
		}
		marks, err = c.journal.AliveMarks(ctx)
	}
	silence := time.NewTimer(scheduler.LeaderTakeOver(lease))
	defer silence.Stop()
	log.Info("standing by: taking over when the leader renews nothing for three quarters of a lease", zap.Duration("lease", lease))
	for {
		select {
		case <-ctx.Done():
			return cfg, nil, false
		case <-marks:
			silence.Reset(scheduler.LeaderTakeOver(lease))
			continue
		case <-silence.C:
		}
		next, s, err := c.takeOver(ctx, cfg)
		if err == nil {
			return next, s, true
		}
		if errors.Is(err, durable.ErrLeadTaken) {
			log.Info("another standby took the store over first")
		} else {
			log.Error("taking the store over failed; trying again", zap.Error(err))
		}
		silence.Reset(scheduler.LeaderTakeOver(lease))
	}
}

// takeOver leads the store and starts a scheduler from its journal, as a
// scheduler restarted after a crash: it re-learns the running jobs from
// their GPUs before it places.
func (c *Cluster) takeOver(ctx context.Context, cfg scheduler.Config) (scheduler.Config, *scheduler.Scheduler, error) {
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	term, err := c.journal.Lead(tctx, c.holder())
	if err != nil {
		return cfg, nil, err
	}
	st, err := c.journal.Load(tctx)
	if err != nil {
		return cfg, nil, err
	}
	if err := c.journal.MarkRunning(tctx); err != nil {
		return cfg, nil, err
	}
	cfg.Restored, cfg.Inherited, cfg.Carried = &st, nil, nil
	cfg.Incarnation = 0 // the journal's last one, plus one
	cfg.Since = time.Now()
	s, err := scheduler.New(cfg)
	if err != nil {
		return cfg, nil, err
	}
	c.watchSubs(s.Subscriptions())
	inc := s.Remains().Incarnation
	cfg.Incarnation = inc // a restart after a crash here numbers from it
	c.cfg.Logger.Info("took the control plane over", zap.Uint64("term", term), zap.Int("incarnation", inc),
		zap.Int("jobs", len(st.Jobs)))
	emit := c.supervisorEmitter(cfg.Conn)
	emit.Emit(cfg.Subjects.SchedEvent(events.SchedUp), events.Type("sched", events.SchedUp), "", c.Clock.Now(),
		events.SchedLifecycle{Incarnation: inc, Reason: fmt.Sprintf("took the control plane over (term %d)", term), Policy: cfg.Policy, Durable: true})
	return cfg, s, nil
}
