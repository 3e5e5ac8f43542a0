package events

import (
	"regexp"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"
)

// published keeps what an Emitter publishes.
type published struct{ msgs [][]byte }

func (p *published) Publish(_ string, data []byte) error {
	p.msgs = append(p.msgs, append([]byte(nil), data...))
	return nil
}

// TestAnEventEmittedEncodedIsTheSameBytes checks that EmitEncoded sends,
// for data encoded beforehand, the bytes Emit sends for the value: the
// scheduler's core encodes its events' data when it emits them, and the
// shell wraps them. Only the envelope's id and wall time, which differ on
// every call, are left out of the comparison.
func TestAnEventEmittedEncodedIsTheSameBytes(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	started := at.Add(-time.Hour)
	values := []any{
		JobInfo{JobID: "j-1", Name: "bert <large> & co", Tenant: "team-a", Priority: 2, State: JobPlaced, GPUs: 2,
			GPUIDs: []string{"gpu-0", "gpu-1"}, ProgressS: 12.5, StartedAt: &started, Reason: "é\u2028\"quoted\""},
		&Decision{JobID: "j-2", Victims: []string{"j-1"}, Refusals: []string{"n1-gpu-0: no answer"}},
		map[string]any{"b": 1, "a": []int{1, 2}},
		nil,
		"plain",
	}
	stamp := regexp.MustCompile(`"id":"[^"]*"|"time":"[^"]*"`)
	for i, v := range values {
		var direct, encoded published
		if err := NewEmitter(&direct, "/scheduler/1").Emit("gpusched.evt.job.placed", "gpusched.job.placed", "j", at, v); err != nil {
			t.Fatal(err)
		}
		data, err := gojson.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := NewEmitter(&encoded, "/scheduler/1").EmitEncoded("gpusched.evt.job.placed", "gpusched.job.placed", "j", at, data); err != nil {
			t.Fatal(err)
		}
		a, b := stamp.ReplaceAll(direct.msgs[0], nil), stamp.ReplaceAll(encoded.msgs[0], nil)
		if string(a) != string(b) {
			t.Errorf("value %d: Emit sent\n%s\nEmitEncoded sent\n%s", i, direct.msgs[0], encoded.msgs[0])
		}
	}
}
