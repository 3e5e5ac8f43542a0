package observer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

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

// OpenRecording opens a recording for appending. When it already holds
// events, it returns the History that resumes after its last one (a
// restarted `observer record` catches up without a gap, from the kept
// event stream); a last line cut short by a crash is dropped first.
func OpenRecording(path string) (*os.File, History, error) {
	var h History
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, h, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, h, err
	}
	if end := bytes.LastIndexByte(data, '\n') + 1; end < len(data) {
		// A last line cut short by a crash.
		if err := f.Truncate(int64(end)); err != nil {
			f.Close()
			return nil, h, err
		}
		data = data[:end]
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, h, err
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if last := lines[len(lines)-1]; len(last) > 0 {
		var ev struct {
			ID   string    `json:"id"`
			Time time.Time `json:"time"`
		}
		if err := json.Unmarshal(last, &ev); err != nil || ev.ID == "" {
			f.Close()
			return nil, h, fmt.Errorf("%s: its last line is not an event: give another --out, or --overwrite", path)
		}
		h.AfterID, h.AfterTime = ev.ID, ev.Time
	}
	return f, h, nil
}
