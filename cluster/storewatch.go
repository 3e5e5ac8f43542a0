package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// The store watch: a disk that fills under the embedded server's file
// store is seen and answered. NATS's file store takes its first write
// error as final (each stream that hit the full disk refuses every later
// write, even once space returns, until it is opened again), and a write
// it cannot make is never acknowledged, so a submission learnt of it only
// after the journal's 5-second acknowledgement timeout. The watch reads
// the store's free space; below storeFullBelow it tells the scheduler the
// store is down (OpStoreDown: submissions are refused on "store" at once),
// and once space returns it reopens JetStream — every stream re-read from
// its files, as a restart would — and tells the scheduler it is up. Every
// record acknowledged before the disk filled is in the files it reopens.

// storeFullBelow is the free space under which the store's disk counts as
// full: a job's record is a few hundred bytes, an event a few KiB, and
// the file store opens new blocks as it goes; 1 MiB is room for thousands.
const storeFullBelow = 1 << 20

// storeWatchEvery is how often the watch reads the free space: a full
// disk is answered within it (the target: a refusal within a second).
const storeWatchEvery = 250 * time.Millisecond

// storeDownRepeat is how often the watch says again that the store is
// down: a scheduler restarted meanwhile learns it too.
const storeDownRepeat = 2 * time.Second

// watchStore starts the store watch of an embedded server's file store.
func (c *Cluster) watchStore(ctx context.Context, cfg Config) error {
	if cfg.Store != durable.File || c.server == nil || cfg.DataDir == "" {
		return nil
	}
	if _, err := freeBytes(cfg.DataDir); err != nil {
		cfg.Logger.Warn("the store's free space cannot be read: a full disk will not be seen", zap.String("dir", cfg.DataDir), zap.Error(err))
		return nil
	}
	nc, err := c.dial("store-watch", nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	w := &storeWatch{c: c, nc: nc, dir: cfg.DataDir, subjects: events.NewSubjects(cfg.Prefix),
		log: cfg.Logger.With(zap.String("actor", "store-watch"))}
	c.wg.Go(func() {
		defer nc.Close()
		w.run(ctx)
	})
	return nil
}

// storeWatch is the state of the store watch.
type storeWatch struct {
	c        *Cluster
	nc       *nats.Conn
	dir      string
	subjects events.Subjects
	log      *zap.Logger
	// down is why the store is down ("" while it is up); saidAt when the
	// scheduler was last told.
	down   string
	saidAt time.Time
}

func (w *storeWatch) run(ctx context.Context) {
	tick := time.NewTicker(storeWatchEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		free, err := freeBytes(w.dir)
		if err != nil {
			continue
		}
		switch {
		case free < storeFullBelow && w.down == "":
			w.down = fmt.Sprintf("the disk of %s has %s free", w.dir, model.Bytes(free))
			w.log.Warn("the store's disk is full: new jobs are refused until it has room; it is reopened once it has",
				zap.String("dir", w.dir), zap.Uint64("free_bytes", free))
			w.tell(events.OpStoreDown, w.down)
		case free < storeFullBelow && time.Since(w.saidAt) >= storeDownRepeat:
			w.tell(events.OpStoreDown, w.down)
		case free >= storeFullBelow && w.down != "":
			if err := w.reopen(); err != nil {
				w.log.Error("the store has room again, but JetStream did not reopen: restart the cluster", zap.Error(err))
				continue
			}
			w.down = ""
			w.log.Info("the store has room again: JetStream reopened, new jobs are accepted", zap.String("dir", w.dir), zap.Uint64("free_bytes", free))
			w.tell(events.OpStoreUp, "")
		}
	}
}

// tell says op to the scheduler.
func (w *storeWatch) tell(op, reason string) {
	w.saidAt = time.Now()
	b, err := json.Marshal(events.Control{Op: op, Reason: reason})
	if err == nil {
		err = w.nc.Publish(w.subjects.SchedCtl(), b)
	}
	if err != nil {
		w.log.Warn("the scheduler was not told of the store", zap.String("op", op), zap.Error(err))
	}
}

// reopen shuts the embedded server's JetStream down and enables it again
// with the same configuration: each stream is opened anew from its files,
// so one whose writes failed on the full disk takes writes again. On a
// NATS cluster (routes) the streams' replicas live on other servers too;
// there the process must be restarted instead.
func (w *storeWatch) reopen() error {
	s := w.c.server
	if s.JetStreamIsClustered() {
		return fmt.Errorf("JetStream is clustered")
	}
	cfg := s.JetStreamConfig()
	if cfg == nil {
		return fmt.Errorf("JetStream is not enabled")
	}
	// The running configuration's StoreDir is the store's jetstream/
	// folder; EnableJetStream adds that folder to what it is given.
	cfg.StoreDir = w.dir
	if err := s.ShutdownJetStream(); err != nil {
		return err
	}
	return s.EnableJetStream(cfg)
}
