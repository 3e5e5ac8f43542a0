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

// Readable is a writer that takes event JSON lines (what Log writes) and
// writes each as the readable line the dashboards show (Summarize):
// names, simulated times and sentences, for a person at a terminal.
// Events too frequent to list (statuses, heartbeats, metrics) are left
// out; a line that is not an event passes through.
func Readable(w io.Writer) io.Writer { return &readable{w: w} }

type readable struct {
	w    io.Writer
	part []byte
}

func (r *readable) Write(p []byte) (int, error) {
	r.part = append(r.part, p...)
	for {
		i := bytes.IndexByte(r.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := r.part[:i]
		if s := Summarize(line); s != "" {
			if _, err := fmt.Fprintln(r.w, s); err != nil {
				return 0, err
			}
		} else if !json.Valid(line) {
			if _, err := r.w.Write(append(line, '\n')); err != nil {
				return 0, err
			}
		}
		r.part = r.part[i+1:]
	}
}
