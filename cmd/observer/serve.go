package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/observer"
	"github.com/gpusched/gpusched/observer/metrics"
	"github.com/gpusched/gpusched/observer/web"
)

// serve runs h on listen until ctx ends.
func serve(ctx context.Context, listen string, h http.Handler, what string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %v (is the port in use? try another, e.g. --listen 127.0.0.1:0)", listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "observer: %s on http://%s\n", what, ln.Addr())
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func runWeb(ctx context.Context, nc *nats.Conn, subjects events.Subjects, listen string) error {
	w, err := observer.NewWatcher(nc, subjects, observer.WatchOptions{})
	if err != nil {
		return err
	}
	go w.Run(ctx)
	log, _ := zap.NewProduction()
	defer log.Sync()
	return serve(ctx, listen, web.New(w, observer.NewControl(nc, subjects), log), "web dashboard")
}

func runMetrics(ctx context.Context, nc *nats.Conn, subjects events.Subjects, listen string) error {
	exp := metrics.New(nil)
	w, err := observer.NewWatcher(nc, subjects, observer.WatchOptions{
		// The events keep the metrics current; a snapshot now and then
		// fills in the GPUs that have been idle since the observer attached.
		Interval:   5 * time.Second,
		OnEvent:    func(ev *events.Decoded, subject string) { exp.OnEvent(ev, subject) },
		OnSnapshot: exp.OnSnapshot,
	})
	if err != nil {
		return err
	}
	exp.SetGaps(w.Gaps())
	go w.Run(ctx)
	return serve(ctx, listen, exp.Handler(), "Prometheus metrics at /metrics")
}
