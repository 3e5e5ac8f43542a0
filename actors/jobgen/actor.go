package jobgen

import (
	"context"
	"encoding/json"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/simclock"
)

// Config configures the generator.
type Config struct {
	Subjects events.Subjects
	Conn     *nats.Conn
	Clock    simclock.Clock
	Logger   *zap.Logger
	Seed     uint64
	// Rate is jobs per simulated hour; 0 turns the generator off.
	Rate float64
	// Demo submits the demo's five jobs first.
	Demo bool
	// Limit stops after this many jobs (0: no limit).
	Limit int
}

// DefaultRate keeps the reference cluster busy without an ever-growing
// queue: 6 jobs an hour, half of them long trainings, load the 8 GPUs to
// about 40–75% mean utilisation with a few preemptions an hour (measured
// over a week of simulated time; at 8 an hour the queue grows without end).
const DefaultRate = 6

// Run submits jobs until ctx ends.
func Run(ctx context.Context, cfg Config) {
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.String("actor", "jobgen"))
	if cfg.Rate <= 0 {
		return
	}
	mix := NewMix(cfg.Seed)
	sent := 0
	submit := func(spec Spec) bool {
		b, _ := json.Marshal(spec)
		msg, err := cfg.Conn.RequestWithContext(ctx, cfg.Subjects.JobSubmit(), b)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("submit failed", zap.String("job", spec.Name), zap.Error(err))
			}
			return ctx.Err() == nil
		}
		var rep struct {
			JobID string           `json:"job_id"`
			State string           `json:"state"`
			Error *json.RawMessage `json:"error"`
		}
		json.Unmarshal(msg.Data, &rep)
		log.Info("submitted", zap.String("job", spec.Name), zap.String("id", rep.JobID), zap.String("state", rep.State),
			zap.String("priority", spec.Priority), zap.String("vram", spec.VRAM), zap.Float64("util", spec.Util))
		sent++
		return cfg.Limit == 0 || sent < cfg.Limit
	}
	if cfg.Demo {
		for _, spec := range mix.Demo() {
			if !submit(spec) {
				return
			}
		}
	}
	for {
		t := cfg.Clock.NewTimer(mix.Interarrival(cfg.Rate))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if !submit(mix.Next()) {
			return
		}
	}
}
