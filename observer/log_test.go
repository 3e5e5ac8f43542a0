package observer

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenRecordingResumesAfterTheLastWholeLine: a recording cut short by
// a crash loses its partial last line and resumes after the line before;
// a file whose last line is not an event is refused; a new file reads live.
func TestOpenRecordingResumesAfterTheLastWholeLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.jsonl")
	lines := `{"id":"a","time":"2026-01-01T00:00:00Z"}` + "\n" + `{"id":"b","time":"2026-01-01T00:00:01Z"}` + "\n" + `{"id":"c","ti`
	os.WriteFile(path, []byte(lines), 0o644)
	f, h, err := OpenRecording(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if h.AfterID != "b" || !h.AfterTime.Equal(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)) {
		t.Fatalf("resume after %q at %s, want b at 00:00:01", h.AfterID, h.AfterTime)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), `"c"`) || !strings.HasSuffix(string(b), "}\n") {
		t.Fatalf("the partial line is still there: %q", b)
	}
	bad := filepath.Join(dir, "notes.txt")
	os.WriteFile(bad, []byte("hello\n"), 0o644)
	if _, _, err := OpenRecording(bad); err == nil || !strings.Contains(err.Error(), "not an event") {
		t.Fatalf("a file of other things: %v", err)
	}
	f, h, err = OpenRecording(filepath.Join(dir, "new.jsonl"))
	if err != nil || h.Replays() {
		t.Fatalf("a new recording: %+v, %v; want live", h, err)
	}
	f.Close()
}

// TestReadableTurnsEventsIntoSentences (issue 45 item 3): observer log
// on a terminal writes each event as the dashboards' line (names, not
// raw CloudEvents), leaves out the too-frequent ones, and keeps lines
// split across writes whole.
func TestReadableTurnsEventsIntoSentences(t *testing.T) {
	var b strings.Builder
	w := Readable(&b)
	placed := `{"specversion":"1.0","id":"1","source":"/sched/1","type":"gpusched.job.started","time":"2026-01-01T00:00:00Z","simtime":"2026-01-01T00:00:00Z","seq":1,"data":{"job_id":"b31af035","name":"BERT-train-49","state":"running","gpu_ids":["gpu-1"],"node":"node-0"}}`
	status := `{"specversion":"1.0","id":"2","source":"/gpu/node-0/gpu-1/1","type":"gpusched.gpu.status","time":"2026-01-01T00:00:00Z","simtime":"2026-01-01T00:00:00Z","seq":2,"data":{"gpu":"gpu-1"}}`
	io.WriteString(w, placed[:40])
	io.WriteString(w, placed[40:]+"\n"+status+"\n")
	got := b.String()
	if !strings.Contains(got, "BERT-train-49") || strings.Contains(got, "specversion") || strings.Count(got, "\n") != 1 {
		t.Errorf("readable log:\n%s", got)
	}
}
