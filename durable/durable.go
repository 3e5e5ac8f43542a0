package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// Storage says where JetStream keeps the cluster's state.
type Storage string

// The storages: None runs without JetStream (nothing survives a restart
// of the scheduler), Memory keeps state in the server's memory (it
// survives a scheduler crash, not the process), File on disk (it survives
// both).
const (
	None   Storage = ""
	Memory Storage = "memory"
	File   Storage = "file"
)

// String names the storage: "none", "memory" or "file".
func (s Storage) String() string {
	if s == None {
		return "none"
	}
	return string(s)
}

// Options configures the streams.
type Options struct {
	Storage Storage
	// Replicas is each stream's replica count on a clustered NATS (1 on a
	// single server).
	Replicas int
	// EventsMaxAge and EventsMaxBytes bound the event stream (the oldest
	// events go first); zero: DefaultEventsMaxAge and DefaultEventsMaxBytes.
	// A negative value removes that bound.
	EventsMaxAge   time.Duration
	EventsMaxBytes int64
}

// Defaults for the event stream's bounds.
const (
	DefaultEventsMaxAge   = 24 * time.Hour
	DefaultEventsMaxBytes = 1 << 30
)

// EventStream is the name of the stream that keeps the events under prefix.
// MaxEventBytes is the largest event the event stream keeps: a GPU status
// with hundreds of shares is tens of KiB; half a MiB leaves room and no
// more.
const MaxEventBytes = 512 << 10

func EventStream(prefix string) string { return streamName(prefix) + "_EVENTS" }

// JobBucket is the name of the job journal's key-value bucket under prefix.
func JobBucket(prefix string) string { return streamName(prefix) + "_JOBS" }

// streamName turns a subject prefix into a stream name token (stream
// names may not hold '.', '*', '>' or spaces).
func streamName(prefix string) string {
	if prefix == "" {
		prefix = events.DefaultPrefix
	}
	return strings.ToUpper(strings.NewReplacer(".", "_", "*", "_", ">", "_", " ", "_").Replace(prefix))
}

// Setup creates (or updates) the event stream and the job journal on the
// bus nc reaches, and returns the journal.
func Setup(ctx context.Context, nc *nats.Conn, prefix string, opt Options) (*Journal, error) {
	if opt.Storage == None {
		return nil, errors.New("durable.Setup: no storage")
	}
	j := &Journal{}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096),
		// A write the store never confirms (a server lost mid-write) fails
		// after this, so that it can be written again.
		jetstream.WithPublishAsyncTimeout(asyncTimeout),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) { j.failed(m.Subject, err) }))
	if err != nil {
		return nil, err
	}
	storage := jetstream.FileStorage
	if opt.Storage == Memory {
		storage = jetstream.MemoryStorage
	}
	replicas := max(opt.Replicas, 1)
	maxAge := opt.EventsMaxAge
	if maxAge == 0 {
		maxAge = DefaultEventsMaxAge
	}
	maxBytes := opt.EventsMaxBytes
	if maxBytes == 0 {
		maxBytes = DefaultEventsMaxBytes
	}
	if maxAge < 0 {
		maxAge = 0 // JetStream: no limit
	}
	if maxBytes < 0 {
		maxBytes = -1
	}
	subjects := events.NewSubjects(prefix)
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        EventStream(subjects.Prefix),
		Description: "gpusched events under " + subjects.Prefix + " (observer log --since / --from-start)",
		Subjects:    subjects.StoredEvents(),
		Storage:     storage,
		Replicas:    replicas,
		MaxAge:      maxAge,
		MaxBytes:    maxBytes,
		// An event larger than any the cluster publishes is not kept: a
		// body of megabytes on one node's own subject evicted 83,728
		// stored events in 7 s (issue 22 item 6).
		MaxMsgSize: MaxEventBytes,
		Discard:    jetstream.DiscardOld,
	}); err != nil {
		return nil, fmt.Errorf("event stream %s: %w", EventStream(subjects.Prefix), err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      JobBucket(subjects.Prefix),
		Description: "gpusched job journal under " + subjects.Prefix,
		History:     1,
		Storage:     storage,
		Replicas:    replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("job journal %s: %w", JobBucket(subjects.Prefix), err)
	}
	j.js, j.kv, j.subject = js, kv, "$KV."+JobBucket(subjects.Prefix)+"."
	j.fenceRecords = replicas == 1
	return j, nil
}

// asyncTimeout bounds the wait for the store to confirm a write.
const asyncTimeout = 5 * time.Second

// Reset deletes the job journal and the event stream under prefix (a
// fresh start on a store that holds a previous run).
func Reset(ctx context.Context, nc *nats.Conn, prefix string) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	subjects := events.NewSubjects(prefix)
	if err := js.DeleteKeyValue(ctx, JobBucket(subjects.Prefix)); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("deleting the job journal: %w", err)
	}
	if err := js.DeleteStream(ctx, EventStream(subjects.Prefix)); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("deleting the event stream: %w", err)
	}
	return nil
}

// Record is one accepted job as the journal keeps it: enough to put it
// back in the queue in its place, to account for it where it ran, and to
// answer job.get about it after a restart.
type Record struct {
	JobID     string     `json:"job_id"`
	Spec      events.Job `json:"spec"`
	Seq       uint64     `json:"seq"`
	Submitted time.Time  `json:"submitted"`
	State     string     `json:"state"`
	Reason    string     `json:"reason,omitempty"`
	// ProgressS is the work kept: the last checkpoint reached.
	ProgressS   float64             `json:"progress_s"`
	Placement   string              `json:"placement,omitempty"`
	Node        string              `json:"node,omitempty"`
	GPUs        []string            `json:"gpus,omitempty"`
	Preemptions int                 `json:"preemptions,omitempty"`
	LostWorkS   float64             `json:"lost_work_s,omitempty"`
	Started     *time.Time          `json:"started,omitempty"`
	Ended       *time.Time          `json:"ended,omitempty"`
	History     []events.Transition `json:"history,omitempty"`
	// HistoryDropped counts what the history dropped (events.JobInfo).
	HistoryDropped int `json:"history_dropped,omitempty"`
	// Awaiting names the GPUs (with their incarnation) a stop was sent to
	// that did not answer: the job is not placed again until each shows
	// it stopped.
	Awaiting map[string]int `json:"awaiting,omitempty"`
	// Training is a training job's model state as the scheduler last knew
	// it (its progress, epochs, restarts): a queued one taken back after
	// a restart goes on from it.
	Training *model.TrainingState `json:"training,omitempty"`
	// CPUEnds is when a running CPU-only job ends (simulated time): no GPU
	// knows it, so a restarted scheduler takes it back running from here.
	CPUEnds *time.Time `json:"cpu_ends,omitempty"`
	// At is the simulated time of the write.
	At time.Time `json:"at"`
}

// State is what the journal holds.
type State struct {
	// Jobs are the records in acceptance order (seq).
	Jobs []Record
	// Incarnation is the last scheduler incarnation that started on it.
	Incarnation int
	// SimTime is the latest simulated time written: where a restarted
	// cluster's clock resumes.
	SimTime time.Time
	// Totals are the running totals last written (PutTotals).
	Totals events.Totals
	// Stopped says the last process on the store stopped cleanly
	// (MarkStopped); false after a crash, or on a store older than it.
	Stopped bool
}

// Journal is the job journal.
type Journal struct {
	js      jetstream.JetStream
	kv      jetstream.KeyValue
	subject string
	onError atomic.Pointer[func(jobID string, err error)]
	// term is the leadership the journal writes under (Lead; 0: none).
	term atomic.Uint64
	// fenceRecords: the store has one replica, and fences every record
	// (publishAsync).
	fenceRecords bool
}

// OnError sets what is called (on another goroutine) when the store
// refuses or never confirms a job's record: the writer writes it again.
func (j *Journal) OnError(f func(jobID string, err error)) { j.onError.Store(&f) }

func (j *Journal) failed(subject string, err error) {
	id, ok := strings.CutPrefix(subject, j.subject+jobKey)
	if f := j.onError.Load(); ok && f != nil {
		(*f)(id, err)
	}
}

const (
	jobKey         = "job."
	incarnationKey = "meta.scheduler"
	bootKey        = "meta.boot"
	clockKey       = "meta.clock"
	totalsKey      = "meta.totals"
	stoppedKey     = "meta.stopped"
)

// MarkRunning records that a cluster process runs on the store: should it
// crash, the next start finds no clean stop after it (State.Stopped).
func (j *Journal) MarkRunning(ctx context.Context) error {
	return j.put(ctx, stoppedKey, []byte("running"))
}

// MarkStopped records a clean stop (Ctrl-C, q): the next start begins a
// new run unless asked to resume (cluster --resume).
func (j *Journal) MarkStopped(ctx context.Context) error {
	return j.put(ctx, stoppedKey, []byte("stopped"))
}

// PutTotals records the cluster's running totals (preemptions, energy …),
// without waiting for the store: a restarted cluster goes on from them.
func (j *Journal) PutTotals(t events.Totals) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	_, err = j.publishAsync(j.subject+totalsKey, b)
	return err
}

// PutClock records the simulated time now, without waiting for the
// store: a restarted cluster's clock resumes from the latest.
func (j *Journal) PutClock(now time.Time) error {
	b, err := now.MarshalText()
	if err != nil {
		return err
	}
	_, err = j.publishAsync(j.subject+clockKey, b)
	return err
}

// Put writes a record without waiting for the store; the future says when
// it is stored. Writes from one connection are stored in order, so the
// last Put of a job is what Load returns.
func (j *Journal) Put(r *Record) (jetstream.PubAckFuture, error) {
	data, err := gojson.Marshal(r) // the same JSON as encoding/json, faster: one per handled message
	if err != nil {
		return nil, err
	}
	return j.publishAsync(j.subject+jobKey+r.JobID, data)
}

// SetIncarnation stores the incarnation of a starting scheduler (waiting
// for the store).
func (j *Journal) SetIncarnation(ctx context.Context, n int) error {
	return j.put(ctx, incarnationKey, []byte(strconv.Itoa(n)))
}

// NextBoot counts one more start of a cluster process on this store and
// returns its number (1 for the first): the process numbers its actors'
// incarnations from it, so that none repeats across a restart (IncarnationBase).
func (j *Journal) NextBoot(ctx context.Context) (int, error) {
	boot := 0
	e, err := j.kv.Get(ctx, bootKey)
	switch {
	case err == nil:
		if boot, err = strconv.Atoi(string(e.Value())); err != nil {
			return 0, fmt.Errorf("job journal: the boot count %q: %w", e.Value(), err)
		}
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		return 0, err
	}
	boot++
	if err := j.put(ctx, bootKey, []byte(strconv.Itoa(boot))); err != nil {
		return 0, err
	}
	return boot, nil
}

// IncarnationsPerBoot is the block of incarnations each start of a cluster
// process on one store numbers its GPU and node actors from: the n-th
// start's first incarnation is (n-1)×IncarnationsPerBoot+1. A GPU restarted
// or rejoined more often than that in one process run would reach the next
// block (not seen: a flapping GPU rejoins about once a lease).
const IncarnationsPerBoot = 10_000

// IncarnationBase is the incarnation before the first one of boot.
func IncarnationBase(boot int) int { return max(0, boot-1) * IncarnationsPerBoot }

// Flush waits until every Put so far is stored (or ctx ends).
func (j *Journal) Flush(ctx context.Context) error {
	select {
	case <-j.js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("job journal: %d writes not confirmed: %w", j.js.PublishAsyncPending(), ctx.Err())
	}
}

// Load reads the whole journal.
func (j *Journal) Load(ctx context.Context) (State, error) {
	var st State
	w, err := j.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return st, err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("job journal: reading it: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return st, errors.New("job journal: the watch ended before the last record")
			}
			if e == nil { // every record so far has been delivered
				sort.Slice(st.Jobs, func(a, b int) bool { return st.Jobs[a].Seq < st.Jobs[b].Seq })
				return st, nil
			}
			switch {
			case e.Key() == incarnationKey:
				st.Incarnation, _ = strconv.Atoi(string(e.Value()))
			case e.Key() == stoppedKey:
				st.Stopped = string(e.Value()) == "stopped"
			case e.Key() == totalsKey:
				json.Unmarshal(e.Value(), &st.Totals) // a malformed copy: totals from zero, nothing else lost
			case e.Key() == clockKey:
				var at time.Time
				if at.UnmarshalText(e.Value()) == nil && at.After(st.SimTime) {
					st.SimTime = at
				}
			case strings.HasPrefix(e.Key(), jobKey):
				var r Record
				if err := json.Unmarshal(e.Value(), &r); err != nil {
					return st, fmt.Errorf("job journal: record %s: %w", e.Key(), err)
				}
				st.Jobs = append(st.Jobs, r)
				if r.At.After(st.SimTime) {
					st.SimTime = r.At
				}
			}
		}
	}
}
