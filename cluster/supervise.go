package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gpusched/gpusched/actors/node"
	"github.com/gpusched/gpusched/actors/scheduler"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
)

// superviseScheduler runs the scheduler and restarts it after a crash
// (a kill-scheduler chaos, or a panic) with a backoff and the next
// incarnation, publishing sched.down (with what the dead one held) and
// sched.up. The new scheduler re-learns GPUs, nodes and the jobs they run
// from heartbeats and the GPU actors; with a job journal it takes the
// queue and every job's record from it, without one the queue is gone.
// The policy is configuration, so it carries over.
//
// It returns when ctx ends (nil), or scheduler.ErrDeposed when another
// control plane took the job journal over: this one is not restarted.
func (c *Cluster) superviseScheduler(ctx context.Context, cfg scheduler.Config, s *scheduler.Scheduler) error {
	log := c.cfg.Logger.With(zap.String("actor", "scheduler-supervisor"))
	emit := c.supervisorEmitter(cfg.Conn)
	base := c.cfg.RestartBackoff
	if base <= 0 {
		base = node.DefaultRestartBackoff
	}
	backoff := time.Duration(0)
	// On a virtual clock a restart happens in simulated time: the kill's
	// hold comes over from the dying scheduler (Run), the backoff is a
	// simulated-time timer armed before it is let go, and the timer's hold
	// lasts until the successor is subscribed, announced and has heard
	// every node again (Host.Announce): the same seed restarts it at the
	// same instants, with the same view.
	virtual := c.virtual != nil
	now := time.Now
	if virtual {
		now = c.Clock.Now
	}
	for {
		started := now()
		err := runScheduler(ctx, s)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, scheduler.ErrDeposed) {
			s.Drain()
			rem := s.Remains()
			rem.Reason = err.Error()
			emit.Emit(cfg.Subjects.SchedEvent(events.SchedDown), events.Type("sched", events.SchedDown), "", c.Clock.Now(), rem)
			return err
		}
		failedOver := errors.Is(err, scheduler.ErrFailedOver)
		if virtual && !errors.Is(err, scheduler.ErrKilled) && !failedOver && !s.HoldsClock() {
			// A panic outside an input that held the clock hands over no
			// hold: take one. One inside such an input (a message, a
			// virtual timer: nearly always) hands over that input's, and
			// taking another would leave the clock held for good: the run
			// would never end.
			c.Clock.Hold()
		}
		s.Drain()
		rem := s.Remains()
		unanswered := s.Unanswered()
		if rem.Reason == "" && err != nil {
			rem.Reason = err.Error()
		}
		died := now()
		backoff = node.NextBackoff(backoff, base, died.Sub(started))
		if failedOver {
			// A standby takes over at its take-over instant: no backoff
			// (and none counted against the next crash).
			backoff = 0
		}
		// The queue is lost only without a journal; the successor's
		// incarnation is the one the restart below gives it.
		queuedLost := rem.Queued
		if rem.Durable {
			queuedLost = 0
		}
		what := "scheduler crashed; restarting it"
		if failedOver {
			what = "scheduler failed over; a standby takes the control plane over"
		}
		log.Warn(what, zap.String("reason", rem.Reason), zap.Int("queued", rem.Queued),
			zap.Int("queued_lost", queuedLost), zap.Int("running", rem.Running), zap.Duration("backoff", backoff),
			zap.Int("incarnation", max(cfg.Incarnation, 1)+1))
		emit.Emit(cfg.Subjects.SchedEvent(events.SchedDown), events.Type("sched", events.SchedDown), "", c.Clock.Now(), rem)
		if virtual {
			t := c.Clock.NewTimer(backoff)
			c.Clock.Release()
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C(): // held until the successor is up
			}
		}
		for first := true; ; first = false {
			if (!virtual || !first) && !node.WaitBackoff(ctx, backoff) {
				return nil
			}
			cfg.Incarnation = max(cfg.Incarnation, 1) + 1
			cfg.Policy, cfg.Queue = rem.Policy, rem.Queue
			// What the dead one took and never answered: its clients
			// wait, maybe without a deadline (the job generator).
			cfg.Unanswered = unanswered
			// The totals go on from the predecessor's (never backwards).
			cfg.Carried = rem.Totals
			// What ended on the GPUs since the predecessor died, no
			// scheduler saw: the new one accounts for it.
			cfg.Since = died
			if c.journal != nil {
				// The journal, not the post-mortem: the dead scheduler's
				// last writes first, then everything it held.
				if err := s.FlushJournal(); err != nil {
					log.Error("the dead scheduler's last journal writes are unconfirmed", zap.Error(err))
				}
				lctx, done := context.WithTimeout(ctx, 30*time.Second)
				st, err := c.journal.Load(lctx)
				done()
				if err != nil {
					log.Error("reading the job journal failed; retrying", zap.Error(err))
					continue
				}
				cfg.Restored, cfg.Inherited = &st, nil
			} else if c.memoryJournal != nil {
				// The dead scheduler's records, as a durable journal would
				// hold them (its writes are confirmed within its steps).
				var totals events.Totals
				if rem.Totals != nil {
					totals = *rem.Totals
				}
				st := c.memoryJournal.State(cfg.Incarnation-1, died, totals)
				cfg.Restored, cfg.Inherited = &st, nil
			} else {
				cfg.Inherited = rem.RunningJobs
			}
			next, err := scheduler.New(cfg)
			if err == nil {
				s = next
				break
			}
			if durable.IsDeposed(err) {
				return scheduler.ErrDeposed // the store has a new leader: no restart here
			}
			log.Error("scheduler restart failed; retrying", zap.Error(err))
		}
		c.watchSubs(s.Subscriptions())
		up := "restarted after: " + rem.Reason
		if failedOver {
			up = "a standby took the control plane over after: " + rem.Reason
		}
		emit.Emit(cfg.Subjects.SchedEvent(events.SchedUp), events.Type("sched", events.SchedUp), "", c.Clock.Now(),
			events.SchedLifecycle{Incarnation: cfg.Incarnation, Reason: up, Policy: cfg.Policy})
		if virtual {
			for _, h := range c.hosts {
				h.Announce()
			}
			c.Clock.Release()
		} else if c.cfg.Shape.GPUCount() <= joinWave {
			// This process's nodes beat to the successor at once (a
			// remote node does on its sched.up), so it re-learns them
			// without waiting a period; past a join wave of GPUs the
			// periodic beats spread what a burst would put in its mailbox
			// at one instant (see joinWave).
			for _, h := range c.hosts {
				h.Announce()
			}
		}
	}
}

// runScheduler runs s, turning a panic into an error.
func runScheduler(ctx context.Context, s *scheduler.Scheduler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return s.Run(ctx)
}
