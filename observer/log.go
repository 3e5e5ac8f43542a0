package observer

import (
	"context"
	"io"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/events"
)

// Log writes every event of the cluster to out as one JSON line (the
// CloudEvents envelope as published) until ctx ends: live, or from where
// h says in the kept event stream (see ReadEvents).
func Log(ctx context.Context, nc *nats.Conn, subjects events.Subjects, h History, out io.Writer) error {
	return ReadEvents(ctx, nc, subjects, h, func(_ string, data []byte) error {
		_, err := out.Write(append(data, '\n'))
		return err
	})
}
