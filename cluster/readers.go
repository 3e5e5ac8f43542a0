package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
)

// NATS server subjects the reader warden listens on, in the control
// account: the audit of every JetStream API call (naming the calling
// client's account, which the server sets itself on a request that
// crossed an import) and the deletion of a consumer of the event stream.
const (
	jsAuditAdvisory           = "$JS.EVENT.ADVISORY.API"
	jsConsumerDeletedAdvisory = "$JS.EVENT.ADVISORY.CONSUMER.DELETED."
)

// readersReconcileEvery is how often the warden lists the event stream's
// consumers to forget the ones whose deletion it did not hear of.
const readersReconcileEvery = 30 * time.Second

// readerWarden holds every account that reads the event stream through
// an import (observers' and admins' own accounts) to its bound of
// consumers, and deletes a push consumer such an account made
// (auth.Readers). It runs in the control-plane process, on the control
// account's connection.
type readerWarden struct {
	c        *Cluster
	nc       *nats.Conn
	js       jetstream.JetStream
	stream   string
	subjects events.Subjects
	readers  *auth.Readers
	log      *zap.Logger
	refusals *zap.Logger
	emit     *events.Emitter
}

// keepReaders starts the warden on an authenticated cluster that keeps an
// event stream.
func (c *Cluster) keepReaders(ctx context.Context, cfg Config) error {
	if cfg.Auth == nil || cfg.Store == durable.None || cfg.ReadersPerAccount < 0 {
		return nil
	}
	bound := cfg.ReadersPerAccount
	if bound == 0 {
		bound = auth.DefaultReadersPerAccount
	}
	nc, err := c.dial("readers", nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return err
	}
	log := cfg.Logger.With(zap.String("actor", "reader-warden"))
	w := &readerWarden{c: c, nc: nc, js: js, stream: durable.EventStream(cfg.Prefix), subjects: events.NewSubjects(cfg.Prefix),
		readers: auth.NewReaders(bound), log: log, refusals: auth.RefusalLog(log), emit: events.NewEmitter(nc, "/cluster/readers")}
	// One channel for both: the warden's state is its loop's alone.
	in := make(chan *nats.Msg, 256)
	forward := func(m *nats.Msg) {
		select {
		case in <- m:
		case <-ctx.Done():
		}
	}
	if err := subscribeAll(nc, 64<<20, forward, jsAuditAdvisory, jsConsumerDeletedAdvisory+w.stream+".*"); err != nil {
		nc.Close()
		return err
	}
	c.wg.Go(func() {
		defer nc.Close()
		w.run(ctx, in)
	})
	return nil
}

// apiAudit is the part of the server's JetStream API audit the warden
// reads.
type apiAudit struct {
	Client *struct {
		Account string `json:"acc"`
		User    string `json:"user"`
	} `json:"client"`
	Subject  string `json:"subject"`
	Response string `json:"response"`
}

// consumerCreated is the part of a consumer-create response the warden
// reads.
type consumerCreated struct {
	Stream string `json:"stream_name"`
	Name   string `json:"name"`
	Config struct {
		DeliverSubject string `json:"deliver_subject"`
	} `json:"config"`
	Error *struct {
		Description string `json:"description"`
	} `json:"error"`
}

func (w *readerWarden) run(ctx context.Context, in <-chan *nats.Msg) {
	reconcile := time.NewTicker(readersReconcileEvery)
	defer reconcile.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-reconcile.C:
			w.reconcile(ctx)
		case m := <-in:
			if strings.HasPrefix(m.Subject, jsConsumerDeletedAdvisory) {
				var d struct {
					Consumer string `json:"consumer"`
				}
				if json.Unmarshal(m.Data, &d) == nil {
					w.readers.Deleted(d.Consumer)
				}
				continue
			}
			w.audited(ctx, m.Data)
		}
	}
}

// audited reads one API audit: a consumer of the event stream made by
// another account than the control account's is counted, or deleted.
func (w *readerWarden) audited(ctx context.Context, data []byte) {
	var a apiAudit
	if json.Unmarshal(data, &a) != nil || a.Client == nil || a.Client.Account == "" || a.Client.Account == auth.ControlAccount {
		return
	}
	if !strings.HasPrefix(a.Subject, "$JS.API.CONSUMER.CREATE.") && !strings.HasPrefix(a.Subject, "$JS.API.CONSUMER.DURABLE.CREATE.") {
		return
	}
	var r consumerCreated
	if json.Unmarshal([]byte(a.Response), &r) != nil || r.Error != nil || r.Stream != w.stream || r.Name == "" {
		return
	}
	reason := w.readers.Created(a.Client.Account, r.Name, r.Config.DeliverSubject != "")
	if reason == "" {
		return
	}
	del, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := w.js.DeleteConsumer(del, w.stream, r.Name)
	cancel()
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		w.log.Error("a refused reader could not be deleted", zap.String("account", a.Client.Account), zap.String("consumer", r.Name), zap.Error(err))
	}
	w.refusals.Warn("reader refused: its consumer of the event stream is deleted", zap.String("account", a.Client.Account),
		zap.String("user", a.Client.User), zap.String("consumer", r.Name), zap.String("reason", reason))
	data2 := events.RefusedReader{Account: a.Client.Account, User: a.Client.User, Consumer: r.Name, Reason: reason}
	if err := w.emit.Emit(w.subjects.SecurityEvent(events.ReaderRefused), events.Type("security", events.ReaderRefused), r.Name, w.c.Clock.Now(), data2); err != nil {
		w.log.Warn("reader refused: event not published", zap.Error(err))
	}
}

// reconcile forgets the consumers that no longer exist.
func (w *readerWarden) reconcile(ctx context.Context) {
	list, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	stream, err := w.js.Stream(list, w.stream)
	if err != nil {
		return
	}
	exist := map[string]bool{}
	names := stream.ConsumerNames(list)
	for name := range names.Name() {
		exist[name] = true
	}
	if names.Err() != nil {
		return
	}
	w.readers.Only(exist)
}
