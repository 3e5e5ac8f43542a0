package events

import (
	"bytes"
	"encoding/json"

	"github.com/gpusched/gpusched/model"
)

// DecodeStrict decodes a request body into v, naming an unknown or
// mistyped field in the error; an empty body is an empty object.
func DecodeStrict(data []byte, into any) *model.FieldError {
	if fe := CheckSize(data); fe != nil {
		return fe
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		switch e := err.(type) {
		case *json.UnmarshalTypeError:
			if e.Field == "" {
				return model.Errorf("body", "must be a JSON object, not a %s", e.Value)
			}
			return model.Errorf(e.Field, "must be a %s, not a %s", e.Type, e.Value)
		case *json.SyntaxError:
			return model.Errorf("body", "malformed JSON: %v", err)
		}
		msg := err.Error()
		const unknown = "json: unknown field "
		if len(msg) > len(unknown) && msg[:len(unknown)] == unknown {
			var f string
			json.Unmarshal([]byte(msg[len(unknown):]), &f)
			if f == "" {
				return model.Errorf("body", "a field with an empty name")
			}
			return model.Errorf(f, "unknown field %q", f)
		}
		return model.Errorf("body", "malformed JSON: %v", err)
	}
	return nil
}

// MaxRequestBytes bounds the body of a request on a public subject: a
// job spec or a command is a few hundred bytes; anything past this is
// refused, not parsed.
const MaxRequestBytes = 64 << 10

// CheckSize refuses a body past MaxRequestBytes, naming it.
func CheckSize(data []byte) *model.FieldError {
	if len(data) > MaxRequestBytes {
		return model.Errorf("body", "%d bytes is too large: a request body may have at most %d", len(data), MaxRequestBytes)
	}
	return nil
}

// DecodeEvent decodes an event envelope and checks what every reader
// relies on: CloudEvents 1.0, a gpusched type, a source, a seq, and data.
// A reader drops (and may count) an event that fails.
func DecodeEvent(data []byte) (*Decoded, *model.FieldError) {
	var ev Decoded
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, model.Errorf("body", "malformed event: %v", err)
	}
	switch {
	case ev.SpecVersion != "1.0":
		return nil, model.Errorf("specversion", "want 1.0, not %q", ev.SpecVersion)
	case !bytes.HasPrefix([]byte(ev.Type), []byte("gpusched.")):
		return nil, model.Errorf("type", "want gpusched.<family>.<type>, not %q", ev.Type)
	case ev.Source == "":
		return nil, model.Errorf("source", "required")
	case ev.Seq == 0:
		return nil, model.Errorf("seq", "required (counts from 1)")
	case len(ev.Data) == 0 || ev.Data[0] != '{':
		return nil, model.Errorf("data", "must be a JSON object")
	}
	return &ev, nil
}

// DecodeControl decodes a control request to a GPU or node actor and
// checks the fields its operation needs.
func DecodeControl(data []byte) (Control, *model.FieldError) {
	var c Control
	if fe := CheckSize(data); fe != nil {
		return c, fe
	}
	if fe := DecodeStrict(data, &c); fe != nil {
		return c, fe
	}
	switch c.Op {
	case OpReserve:
		if c.JobID == "" {
			return c, model.Errorf("job_id", "a reservation needs job_id")
		}
		if c.CPU < 0 || c.Memory < 0 || c.TTLMillis < 0 {
			return c, model.Errorf("cpu", "cpu, memory and ttl_ms must not be negative")
		}
	case OpCommit, OpAbort:
		if c.JobID == "" {
			return c, model.Errorf("job_id", "%s needs job_id", c.Op)
		}
	case OpPreempt, OpRelease:
		if c.JobID == "" && len(c.Jobs) == 0 {
			return c, model.Errorf("job_id", "%s needs job_id or jobs", c.Op)
		}
	case OpChaos:
		if c.Chaos == nil {
			return c, model.Errorf("chaos", "op chaos needs a chaos object")
		}
	case OpKill, OpDescribe:
	case "":
		return c, model.Errorf("op", "required")
	default:
		return c, model.Errorf("op", "unknown operation %q", c.Op)
	}
	return c, nil
}
