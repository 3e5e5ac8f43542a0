package observer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/bus"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// WatchOptions tune a Watcher.
type WatchOptions struct {
	// Interval between snapshots (wall time; DefaultInterval when zero).
	Interval time.Duration
	// LogLines is how many event-log lines to keep (DefaultLogLines when zero).
	LogLines int
	// Pending bounds the events waiting to be read (DefaultPending when
	// zero). Past it NATS drops this observer's events, never the
	// cluster's: the gaps show up in Missed.
	Pending int
	// OnEvent, when set, is called with every event read (on the reading
	// goroutine; it must not block for long).
	OnEvent func(ev *events.Decoded, subject string)
	// OnSnapshot, when set, is called with every snapshot taken.
	OnSnapshot func(*events.Snapshot)
}

// Defaults of WatchOptions.
const (
	DefaultInterval = 500 * time.Millisecond
	DefaultLogLines = 200
	DefaultPending  = 65536
)

// LogLine is one line of the event log: simulated time and a summary.
type LogLine struct {
	SimTime time.Time `json:"simtime"`
	Kind    string    `json:"kind"`
	Text    string    `json:"text"`
}

// State is what a dashboard draws: the latest snapshot (every page merged),
// the event log, and the watcher's own health.
type State struct {
	Snapshot *events.Snapshot `json:"snapshot"`
	// Explain holds, per running or queued job of the snapshot, the last
	// scheduling decision seen for it (candidates and scores).
	Decisions map[string]events.Decision `json:"decisions"`
	Log       []LogLine                  `json:"log"`
	// Connected says whether the bus is reachable; Err is the last error
	// (waiting for the cluster, a failed snapshot).
	Connected bool   `json:"connected"`
	Err       string `json:"error,omitempty"`
	// Events counts the events read; Missed the events lost to this
	// observer, from the gaps in each source's seq.
	Events uint64 `json:"events"`
	Missed uint64 `json:"missed"`
	// Dropped is the NATS client's own count of the events it dropped for
	// this observer (pending past WatchOptions.Pending): a cross-check of
	// Missed, which also counts what the server could not deliver.
	Dropped int `json:"dropped"`
	// Resyncs counts the snapshots taken after a reconnect.
	Resyncs int       `json:"resyncs"`
	Updated time.Time `json:"updated"`
	// Settling says the scheduler is re-learning the cluster (it
	// restarted): GPUs it has not read yet show their last known figures
	// (Stale), and the summary and job lists are the last ones from
	// before, not the partial ones it has now.
	Settling bool `json:"settling,omitempty"`
}

// Watcher keeps a State current from a cluster: it reads every event (the
// log, seq gaps) and takes a snapshot every Interval and after every
// reconnect. It only reads from the bus, so it cannot slow the cluster.
type Watcher struct {
	nc       *nats.Conn
	subjects events.Subjects
	opt      WatchOptions
	gaps     *Gaps
	sub      *nats.Subscription
	resync   chan struct{}

	mu    sync.Mutex
	state State
	dec   map[string]events.Decision
	// firstLive is each source's first seq read live, until the backfill
	// has merged the history before it (nil then).
	firstLive map[string]uint64
	// known is each GPU's last snapshot entry the scheduler had read, and
	// settled the last snapshot taken while it was not re-learning the
	// cluster: what a snapshot shows instead of unknowns and partial
	// figures (never zero for unknown).
	known   map[string]events.SnapshotGPU
	settled *events.Snapshot
}

// NewWatcher subscribes to the cluster's events on nc; Run takes snapshots.
func NewWatcher(nc *nats.Conn, subjects events.Subjects, opt WatchOptions) (*Watcher, error) {
	if opt.Interval <= 0 {
		opt.Interval = DefaultInterval
	}
	if opt.LogLines <= 0 {
		opt.LogLines = DefaultLogLines
	}
	if opt.Pending <= 0 {
		opt.Pending = DefaultPending
	}
	w := &Watcher{nc: nc, subjects: subjects, opt: opt, gaps: NewGaps(), resync: make(chan struct{}, 1),
		dec: map[string]events.Decision{}, firstLive: map[string]uint64{}}
	sub, err := nc.Subscribe(subjects.AllEvents(), w.onMsg)
	if err != nil {
		return nil, err
	}
	sub.SetPendingLimits(opt.Pending, -1)
	w.sub = sub
	// After a reconnect the picture may be stale: take a snapshot at once.
	nc.SetReconnectHandler(func(*nats.Conn) {
		select {
		case w.resync <- struct{}{}:
		default:
		}
	})
	return w, nil
}

func (w *Watcher) onMsg(m *nats.Msg) {
	if events.Redelivered(m) {
		return // a JetStream delivery someone pulled onto the live subjects: no event
	}
	evp, fe := events.DecodeEvent(m.Data)
	if fe != nil {
		return
	}
	ev := *evp
	w.gaps.See(ev.Source, ev.Seq)
	if w.opt.OnEvent != nil {
		w.opt.OnEvent(&ev, m.Subject)
	}
	line, kind := summarize(&ev)
	var d *events.Decision
	if ev.Type == events.Type("sched", events.SchedDecision) {
		d = new(events.Decision)
		if json.Unmarshal(ev.Data, d) != nil {
			d = nil
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.firstLive[ev.Source]; !seen && w.firstLive != nil {
		w.firstLive[ev.Source] = ev.Seq
	}
	w.state.Events++
	if d != nil && d.JobID != "" {
		w.dec[d.JobID] = *d
	}
	if line != "" {
		w.state.Log = append(w.state.Log, LogLine{SimTime: ev.SimTime, Kind: kind, Text: line})
		if n := len(w.state.Log); n > w.opt.LogLines {
			w.state.Log = append(w.state.Log[:0], w.state.Log[n-w.opt.LogLines:]...)
		}
	}
}

// Run takes snapshots until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	defer w.sub.Unsubscribe()
	tick := time.NewTicker(w.opt.Interval)
	defer tick.Stop()
	// The history is read beside the first snapshot, not before it: a
	// tenant's credentials, which may not read it, cost the wait of a
	// refusal, not the dashboard's first picture.
	var backfill sync.WaitGroup
	defer backfill.Wait()
	backfill.Go(func() { w.Backfill(ctx) })
	w.Refresh()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.resync:
			w.mu.Lock()
			w.state.Resyncs++
			w.state.Log = append(w.state.Log, LogLine{SimTime: time.Now().UTC(), Kind: "observer",
				Text: "reconnected: resynchronised from a snapshot"})
			w.mu.Unlock()
			w.Refresh()
		case <-tick.C:
			w.Refresh()
		}
	}
}

// maxSnapshotPages bounds the pages merged per refresh (256 GPUs a page).
const maxSnapshotPages = 64

// explainPerRefresh bounds the explain requests one refresh sends for
// running jobs placed before the observer attached (their decision events
// went by unseen).
const explainPerRefresh = 16

// Refresh takes a snapshot now (every page) and folds it into the state.
func (w *Watcher) Refresh() {
	snap, err := w.fetch()
	if err == nil {
		w.explainMissing(snap)
		if w.opt.OnSnapshot != nil {
			w.opt.OnSnapshot(snap)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state.Connected = w.nc.IsConnected()
	w.state.Err = ""
	if err != nil {
		w.state.Err = err.Error()
		return
	}
	w.state.Snapshot, w.state.Settling = w.keepKnown(snap), snap.Summary.Settling
	w.state.Updated = time.Now()
	// Keep decisions only for the jobs still in the picture.
	keep := map[string]bool{}
	for _, j := range snap.Running {
		keep[j.JobID] = true
	}
	for _, j := range snap.Queue {
		keep[j.JobID] = true
	}
	for id := range w.dec {
		if !keep[id] {
			delete(w.dec, id)
		}
	}
}

// keepKnown is snap as a dashboard shows it: a GPU the scheduler has not
// read yet (after its restart) keeps the last figures known of it,
// marked stale, and while the scheduler re-learns the cluster the summary
// and the job lists are the last settled ones (with the new snapshot's
// time, incarnation and counts of unknowns) — unknown is never shown as
// zero. It remembers what snap knows for the next one. w.mu is held.
func (w *Watcher) keepKnown(snap *events.Snapshot) *events.Snapshot {
	if w.known == nil {
		w.known = map[string]events.SnapshotGPU{}
	}
	out := *snap
	out.GPUs = make([]events.SnapshotGPU, len(snap.GPUs))
	for i, g := range snap.GPUs {
		if !g.Unknown {
			w.known[g.GPU] = g
		} else if last, ok := w.known[g.GPU]; ok {
			g = last
			g.Unknown, g.Stale = true, true
		}
		out.GPUs[i] = g
	}
	if !snap.Summary.Settling {
		w.settled = snap
		return &out
	}
	if w.settled != nil {
		sum := w.settled.Summary
		sum.Settling, sum.GPUsUnknown, sum.Incarnation = true, snap.Summary.GPUsUnknown, snap.Summary.Incarnation
		out.Summary, out.Running, out.Queue = sum, w.settled.Running, w.settled.Queue
		// Every GPU of the settled picture stays on it, in its order: one
		// the restarted scheduler does not even name yet is unknown too.
		now := map[string]events.SnapshotGPU{}
		for _, g := range out.GPUs {
			now[g.GPU] = g
		}
		gpus := make([]events.SnapshotGPU, 0, max(len(out.GPUs), len(w.settled.GPUs)))
		for _, g := range w.settled.GPUs {
			if cur, ok := now[g.GPU]; ok {
				gpus = append(gpus, cur)
				delete(now, g.GPU)
				continue
			}
			last := w.known[g.GPU]
			last.Unknown, last.Stale = true, true
			gpus = append(gpus, last)
		}
		for _, g := range out.GPUs {
			if _, left := now[g.GPU]; left {
				gpus = append(gpus, g)
			}
		}
		out.GPUs = gpus
	}
	return &out
}

// explainMissing asks the scheduler how the running jobs without a known
// decision were placed.
func (w *Watcher) explainMissing(snap *events.Snapshot) {
	var missing []string
	w.mu.Lock()
	for _, j := range snap.Running {
		if _, ok := w.dec[j.JobID]; !ok && len(missing) < explainPerRefresh {
			missing = append(missing, j.JobID)
		}
	}
	w.mu.Unlock()
	for _, id := range missing {
		b, _ := json.Marshal(events.JobRef{JobID: id})
		msg, err := bus.Request(w.nc, w.subjects.SchedExplain(), b, 2*time.Second)
		if err != nil {
			return
		}
		var d events.Decision
		if json.Unmarshal(msg.Data, &d) != nil || d.JobID == "" {
			continue
		}
		w.mu.Lock()
		w.dec[id] = d
		w.mu.Unlock()
	}
}

func (w *Watcher) fetch() (*events.Snapshot, error) {
	if !w.nc.IsConnected() {
		return nil, fmt.Errorf("waiting for the cluster on %v", w.nc.Servers())
	}
	return FetchSnapshot(w.nc, w.subjects)
}

// FetchSnapshot asks the cluster for its snapshot, every page (up to
// maxSnapshotPages) merged into one; Pages stays the count there was, and
// a snapshot whose pages shrank meanwhile is what the pages said.
func FetchSnapshot(nc *nats.Conn, subjects events.Subjects) (*events.Snapshot, error) {
	snap, err := requestSnapshot(nc, subjects, 0)
	if err != nil {
		return nil, err
	}
	whole := true
	for p := 1; p < snap.Pages && p < maxSnapshotPages; p++ {
		next, err := requestSnapshot(nc, subjects, p)
		var fe *model.FieldError
		if errors.As(err, &fe) && fe.Field == "page" {
			whole = false
			break // the pages shrank since the first: what is left is shown next time
		}
		if err != nil {
			return nil, err
		}
		snap.GPUs = append(snap.GPUs, next.GPUs...)
		snap.Running = append(snap.Running, next.Running...)
		snap.Queue = append(snap.Queue, next.Queue...)
	}
	if whole && snap.Pages <= maxSnapshotPages {
		snap.Pages = 1 // every page is in it
	}
	return snap, nil
}

func requestSnapshot(nc *nats.Conn, subjects events.Subjects, page int) (*events.Snapshot, error) {
	msg, err := nc.Request(subjects.ClusterSnapshot(), fmt.Appendf(nil, `{"page":%d}`, page), 2*time.Second)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, errors.New("no cluster answers yet (start it with: go run ./cmd/cluster)")
		}
		return nil, err
	}
	var snap struct {
		events.Snapshot
		Error *model.FieldError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &snap); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if snap.Error != nil {
		return nil, snap.Error
	}
	return &snap.Snapshot, nil
}

// State returns a copy of the current state.
func (w *Watcher) State() State {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.state
	s.Log = append([]LogLine(nil), w.state.Log...)
	s.Decisions = make(map[string]events.Decision, len(w.dec))
	for k, v := range w.dec {
		s.Decisions[k] = v
	}
	s.Missed = w.gaps.Missed()
	if d, err := w.sub.Dropped(); err == nil {
		s.Dropped = d
	}
	return s
}

// Gaps counts the events missed per source from the gaps in their seq: a
// source (an actor incarnation) numbers its events 1, 2, 3...
type Gaps struct {
	mu     sync.Mutex
	last   map[string]uint64
	missed uint64
}

// NewGaps returns an empty gap counter.
func NewGaps() *Gaps { return &Gaps{last: map[string]uint64{}} }

// See records event seq of source.
func (g *Gaps) See(source string, seq uint64) {
	if seq == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	last, ok := g.last[source]
	switch {
	case !ok:
		// The first event seen from a source: what came before this
		// observer attached is not missed.
	case seq > last+1:
		g.missed += seq - last - 1
	case seq <= last:
		return // a duplicate or a late arrival
	}
	g.last[source] = seq
}

// Missed is the number of events missed so far.
func (g *Gaps) Missed() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.missed
}

// Gaps is the watcher's counter of missed events.
func (w *Watcher) Gaps() *Gaps { return w.gaps }

// backfillTimeout bounds the look at the event history when a watcher
// starts.
const backfillTimeout = 3 * time.Second

// Backfill puts into the event log what happened just before the watcher
// subscribed, from the events the cluster's stream keeps (the demo's first
// placements, for one): the last of them, as many as the log holds, in
// front of what arrived live, each once. Best effort: without a stream, or
// with credentials that may not read it, the log starts with what comes
// live.
func (w *Watcher) Backfill(ctx context.Context) {
	defer func() {
		w.mu.Lock()
		w.firstLive = nil
		w.mu.Unlock()
	}()
	var lines []LogLine
	var sources []string
	var seqs []uint64
	ctx, cancel := context.WithTimeout(ctx, backfillTimeout)
	defer cancel()
	// Many events make no line (statuses, metrics): read a few times the
	// log's length to fill it.
	err := lastEvents(ctx, w.nc, w.subjects, 4*w.opt.LogLines, func(data []byte) {
		ev, fe := events.DecodeEvent(data)
		if fe != nil {
			return
		}
		if line, kind := summarize(ev); line != "" {
			lines = append(lines, LogLine{SimTime: ev.SimTime, Kind: kind, Text: line})
			sources, seqs = append(sources, ev.Source), append(seqs, ev.Seq)
		}
	})
	if err != nil || len(lines) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var kept []LogLine
	for i, l := range lines {
		if first, live := w.firstLive[sources[i]]; live && seqs[i] >= first {
			continue // read live already
		}
		kept = append(kept, l)
	}
	w.state.Log = append(kept, w.state.Log...)
	if n := len(w.state.Log); n > w.opt.LogLines {
		w.state.Log = append(w.state.Log[:0], w.state.Log[n-w.opt.LogLines:]...)
	}
}
