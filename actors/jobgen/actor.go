package jobgen

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/simclock"
)

// Arrival is one job to submit: its body (a job.submit request) at At
// after the generator started.
type Arrival struct {
	At   time.Duration
	Name string
	Body []byte
}

// Source yields arrivals in time order; ok is false when there are no more.
type Source interface {
	Next() (a Arrival, ok bool)
}

// Config configures the generator.
type Config struct {
	Subjects events.Subjects
	Conn     *nats.Conn
	Clock    simclock.Clock
	Logger   *zap.Logger
	Seed     uint64
	// Rate is jobs per simulated hour of the generated mix; 0 turns the
	// generator off unless Source is set.
	Rate float64
	// Demo submits the demo's five jobs first; PinDemo on the GPUs the
	// demo shows them on (DemoGPUs; the caller checks they fit: DemoFits).
	Demo, PinDemo bool
	// Limit stops after this many jobs (0: no limit).
	Limit int
	// Source, when set, replaces the generated mix (a trace).
	Source Source
	// Until stops arrivals after this much simulated time (0: never).
	Until time.Duration
	// Holding says the caller called Clock.Hold for the generator's start,
	// so that a virtual clock waits for the first submissions; Run
	// releases it.
	Holding bool
	// Finished, when set, is called with the number of jobs submitted once
	// the generator has no more to submit (before it releases the clock).
	Finished func(submitted int)
}

// retryFirst and retryMax bound the clock's time between two tries of a
// submission no scheduler received: a restarted scheduler is back within
// its supervisor's backoff (100 ms first, doubling for a scheduler that
// crashes again soon).
const (
	retryFirst = 100 * time.Millisecond
	retryMax   = 5 * time.Second
)

// DefaultRate keeps the reference cluster busy without an ever-growing
// queue: 6 jobs an hour, half of them long trainings, load the 8 GPUs to
// about 40–75% mean utilisation with a few preemptions an hour (measured
// over a week of simulated time; at 8 an hour the queue grows without end).
const DefaultRate = 6

// mixSource is the generated mix as a Source: the demo's jobs at once, then
// Poisson arrivals at rate.
type mixSource struct {
	mix  *Mix
	rate float64
	demo []events.SubmitRequest
	at   time.Duration
}

// NewMixSource is the generated mix for seed at rate jobs per simulated
// hour, starting with the demo's five jobs when demo is set (pinned where
// the demo shows them when pin is set).
func NewMixSource(seed uint64, rate float64, demo, pin bool) Source {
	m := NewMix(seed)
	src := &mixSource{mix: m, rate: rate}
	if demo {
		src.demo = m.Demo(pin)
	}
	return src
}

func (s *mixSource) Next() (Arrival, bool) {
	var spec events.SubmitRequest
	if len(s.demo) > 0 {
		spec, s.demo = s.demo[0], s.demo[1:]
	} else {
		s.at += s.mix.Interarrival(s.rate)
		spec = s.mix.Next()
	}
	b, _ := json.Marshal(spec)
	return Arrival{At: s.at, Name: spec.Name, Body: b}, true
}

// listSource yields a fixed list of arrivals.
type listSource struct {
	arrivals []Arrival
	next     int
}

// NewListSource yields arrivals (a trace) in the order given, which must
// be time order.
func NewListSource(arrivals []Arrival) Source { return &listSource{arrivals: arrivals} }

func (s *listSource) Next() (Arrival, bool) {
	if s.next >= len(s.arrivals) {
		return Arrival{}, false
	}
	s.next++
	return s.arrivals[s.next-1], true
}

// Run submits jobs at their arrival times until the source or the limit
// is exhausted, Until has passed, or ctx ends.
func Run(ctx context.Context, cfg Config) {
	holding := cfg.Holding
	release := func() {
		if holding {
			holding = false
			cfg.Clock.Release()
		}
	}
	defer release()
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.String("actor", "jobgen"))
	src := cfg.Source
	if src == nil {
		if cfg.Rate <= 0 {
			return
		}
		src = NewMixSource(cfg.Seed, cfg.Rate, cfg.Demo, cfg.PinDemo)
	}
	sent := 0
	defer func() {
		if cfg.Finished != nil && ctx.Err() == nil {
			cfg.Finished(sent)
		}
	}()
	// pause waits d of the clock's time with the clock released (a
	// virtual clock moves on meanwhile); false when ctx ended first.
	pause := func(d time.Duration) bool {
		t := cfg.Clock.NewTimer(d)
		release()
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
			holding = true // a fired timer is held until handled
			return true
		}
	}
	submit := func(a Arrival) bool {
		msg, err := cfg.Conn.RequestWithContext(ctx, cfg.Subjects.JobSubmit(), a.Body)
		for wait := retryFirst; errors.Is(err, nats.ErrNoResponders); wait = min(2*wait, retryMax) {
			// No scheduler listens (one is restarting): nobody received
			// the submission, so sending it again cannot submit it twice.
			// Dropping it would lose an arrival of a trace or a seed.
			log.Warn("no scheduler to submit to; trying again", zap.String("job", a.Name), zap.Duration("after", wait))
			if !pause(wait) {
				return false
			}
			msg, err = cfg.Conn.RequestWithContext(ctx, cfg.Subjects.JobSubmit(), a.Body)
		}
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("submit failed", zap.String("job", a.Name), zap.Error(err))
			}
			return ctx.Err() == nil
		}
		var rep events.SubmitAnswer
		json.Unmarshal(msg.Data, &rep)
		if rep.Error != nil {
			// A refused arrival is a job of the workload that will not run:
			// said, not counted as submitted quietly.
			log.Warn("submission refused", zap.String("job", a.Name), zap.String("field", rep.Error.Field), zap.String("error", rep.Error.Message))
		} else {
			log.Info("submitted", zap.String("job", a.Name), zap.String("id", rep.JobID), zap.String("state", rep.State))
		}
		sent++
		return cfg.Limit == 0 || sent < cfg.Limit
	}
	start := cfg.Clock.Now()
	for {
		a, ok := src.Next()
		if !ok || (cfg.Until > 0 && a.At > cfg.Until) {
			return
		}
		// The next timer is armed before the clock is released, so a
		// virtual clock always knows the generator's next arrival.
		if d := start.Add(a.At).Sub(cfg.Clock.Now()); d > 0 && !pause(d) {
			return
		}
		if !submit(a) {
			return
		}
	}
}
