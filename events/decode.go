package events

import (
	"bytes"
	"encoding/json"

	"github.com/gpusched/gpusched/model"
)

// DecodeStrict decodes a request body into v, naming an unknown or
// mistyped field in the error; an empty body is an empty object.
func DecodeStrict(data []byte, into any) *model.FieldError {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		switch e := err.(type) {
		case *json.UnmarshalTypeError:
			return model.Errorf(e.Field, "must be a %s, not a %s", e.Type, e.Value)
		case *json.SyntaxError:
			return model.Errorf("body", "malformed JSON: %v", err)
		}
		msg := err.Error()
		const unknown = "json: unknown field "
		if len(msg) > len(unknown) && msg[:len(unknown)] == unknown {
			var f string
			json.Unmarshal([]byte(msg[len(unknown):]), &f)
			return model.Errorf(f, "unknown field %q", f)
		}
		return model.Errorf("body", "malformed JSON: %v", err)
	}
	return nil
}
