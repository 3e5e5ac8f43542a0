package core

import (
	"math/rand/v2"
)

// connect makes the core's output (outbox) and the parts that decide,
// handing each the data parts and the other deciding parts it works
// with, in the order they depend on one another: the lifecycle and the
// stops first, which every other part moves jobs through; recovery;
// placement; the rounds and intake, which place through it; liveness.
// A part keeps what it is handed for the core's life.
func connect(s *Core, cfg Config, ids *rand.ChaCha8) {
	s.out = &outbox{log: s.log, maxPayload: cfg.MaxPayload, batched: s.nodes.takesBatches, subjects: cfg.Subjects}
	s.life = &lifecycle{queue: s.queue, plugins: s.plugins, training: s.training, replay: s.replay, writes: s.writes, out: s.out, subjects: cfg.Subjects}
	s.unconfirmed = newStopWaits(s.writes)
	s.stops = &stops{waits: s.unconfirmed, callTimeout: cfg.CallTimeout, view: s.view, nodes: s.nodes, running: s.running, jobs: s.jobs,
		calls: s.calls, out: s.out, log: s.log, subjects: cfg.Subjects}
	s.recovery = &recovery{owed: s.restart, callTimeout: cfg.CallTimeout, clock: &s.instant, jobs: s.jobs, order: s.order, classes: s.classes,
		queue: s.queue, view: s.view, nodes: s.nodes, running: s.running, waits: s.unconfirmed, training: s.training, life: s.life,
		writes: s.writes, stats: s.stats, out: s.out, log: s.log, subjects: cfg.Subjects,
		requeueLost: s.requeueLost, shardDone: s.shardDone, complete: s.complete, dirty: &s.dirty}
	s.place = &placer{cfg: &s.cfg, clock: &s.instant, dirty: &s.dirty, jobs: s.jobs, view: s.view, nodes: s.nodes,
		queue: s.queue, running: s.running, plugins: s.plugins, calls: s.calls, stops: s.stops, life: s.life, stats: s.stats,
		training: s.training, classes: s.classes, recovery: s.recovery, owed: s.restart, out: s.out, log: s.log,
		refusalStatus: s.refusalStatus}
	if g := s.replay; g != nil {
		g.clock, g.view, g.stops, g.life, g.stats, g.out, g.log = &s.instant, s.view, s.stops, s.life, s.stats, s.out, s.log
		g.negotiate, g.complete = s.place.negotiate, s.complete
	}
	if tr := s.training; tr != nil {
		tr.clock, tr.jobs, tr.running, tr.view, tr.registry, tr.calls = &s.instant, s.jobs, s.running, s.view, s.nodes, s.calls
		tr.stops, tr.life, tr.writes, tr.stats, tr.plugins = s.stops, s.life, s.writes, s.stats, s.plugins
		tr.out, tr.log, tr.subjects, tr.negotiate = s.out, s.log, cfg.Subjects, s.place.negotiate
	}
	s.live = &liveness{lease: cfg.Lease, callTimeout: cfg.CallTimeout, virtual: cfg.Virtual, view: s.view, nodes: s.nodes, out: s.out,
		log: s.log, subjects: cfg.Subjects}
	s.intake = &intake{msgIDs: &msgIDs{byID: map[string]msgIDJob{}}, rates: newTenantRates(cfg.TenantRate, cfg.TenantBurst),
		ids: ids, cfg: &s.cfg, clock: &s.instant, dirty: &s.dirty, jobs: s.jobs, order: s.order,
		classes: s.classes, queue: s.queue, view: s.view, plugins: s.plugins, running: s.running, training: s.training,
		replay: s.replay, owed: s.restart, life: s.life, stats: s.stats, writes: s.writes, stops: s.stops, place: s.place,
		recovery: s.recovery, out: s.out, log: s.log}
	s.place.notPlacedAtOnce = s.intake.notPlacedAtOnce
	s.answer = &answers{cfg: &s.cfg, clock: &s.instant, jobs: s.jobs, order: s.order, queue: s.queue,
		running: s.running, training: s.training, view: s.view, nodes: s.nodes, owed: s.restart, classes: s.classes,
		plugins: s.plugins, stats: s.stats, recovery: s.recovery, out: s.out}
}
