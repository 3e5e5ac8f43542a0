package observer

import (
	"context"
	"io"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/events"
)

// Log writes every event of the cluster to out as one JSON line (the
// CloudEvents envelope as published) until ctx ends.
func Log(ctx context.Context, nc *nats.Conn, subjects events.Subjects, out io.Writer) error {
	ch := make(chan *nats.Msg, 8192)
	sub, err := nc.ChanSubscribe(subjects.AllEvents(), ch)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-ch:
			if _, err := out.Write(append(m.Data, '\n')); err != nil {
				return err
			}
		}
	}
}
