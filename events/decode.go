package events

import (
	"bytes"
	"errors"
	"reflect"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	gojson "github.com/goccy/go-json"

	"github.com/gpusched/gpusched/model"
)

// DecodeStrict decodes a request body into v, the one strict decoder of
// every request subject: an unknown field (names are case-sensitive), a
// field given twice, a wrong type, invalid UTF-8 and anything after the
// object are refused with an error naming the field and saying in JSON's
// words what was expected ("util: must be a number, not a string"). An
// empty body is an empty object. It is github.com/go-json-experiment/json
// (encoding/json/v2 to be), which checks all of that; encoding/json v1
// lets the last of two equal names win and ignores case.
func DecodeStrict(data []byte, into any) *model.FieldError {
	if fe := CheckSize(data); fe != nil {
		return fe
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		data = []byte("{}")
	} else if trimmed[0] != '{' {
		// null would decode as "nothing given" and a list as an error
		// about Go types: every request body is an object.
		if v := jsontext.Value(trimmed); v.IsValid() {
			return model.Errorf("body", "must be a JSON object, not %s", kindWords(v.Kind()))
		}
		return model.Errorf("body", "malformed JSON: a request body is a JSON object, {…}")
	}
	err := jsonv2.Unmarshal(data, into, jsonv2.RejectUnknownMembers(true))
	if err == nil {
		return nil
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		field := fieldOf(syn.JSONPointer)
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName) && syn.JSONPointer.LastToken() == "":
			return model.Errorf("body", "a field with an empty name, given twice")
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			return model.Errorf(field, "given twice: each field may appear once")
		case field == "":
			return model.Errorf("body", "malformed JSON: %v", syn.Err)
		}
		return model.Errorf(field, "malformed JSON: %v", syn.Err)
	}
	var sem *jsonv2.SemanticError
	if !errors.As(err, &sem) {
		return model.Errorf("body", "malformed JSON: %v", err)
	}
	field := fieldOf(sem.JSONPointer)
	switch {
	case errors.Is(sem.Err, jsonv2.ErrUnknownName):
		name := sem.JSONPointer.LastToken()
		if name == "" {
			return model.Errorf("body", "a field with an empty name")
		}
		return model.Errorf(field, "unknown field %q", name)
	case field == "":
		return model.Errorf("body", "must be a JSON object, not %s", kindWords(sem.JSONKind))
	case sem.Err != nil && sem.GoType != nil && !isBuiltin(sem.GoType):
		// A domain type's own refusal ("unknown priority …", "not a size").
		return model.Errorf(field, "%v", sem.Err)
	case sem.JSONKind == '0' && len(sem.JSONValue) > 0:
		// A number the type cannot hold: a fraction or a sign for a
		// whole number, or past the type's range.
		if w := typeWords(sem.GoType); w != "a number" {
			return model.Errorf(field, "must be %s, not %s", w, sem.JSONValue)
		}
		return model.Errorf(field, "%s is out of range", sem.JSONValue)
	}
	return model.Errorf(field, "must be %s, not %s", typeWords(sem.GoType), kindWords(sem.JSONKind))
}

// fieldOf names the field a JSON pointer points into: its object member
// names joined by dots, array indexes left out ("/models/0" is "models").
// A body is an object, so its first token is a name even when it looks
// like an index ({"0": …}).
func fieldOf(p jsontext.Pointer) string {
	var names []string
	for tok := range p.Tokens() {
		if len(names) == 0 || tok == "" || strings.Trim(tok, "0123456789") != "" {
			names = append(names, tok)
		}
	}
	return strings.Join(names, ".")
}

// kindWords says a JSON value's kind as a person would.
func kindWords(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "true or false"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "a list"
	}
	return "that"
}

// typeWords says what JSON a Go type takes.
func typeWords(t reflect.Type) string {
	if t == nil {
		return "something else"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, not negative"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "something else"
}

// isBuiltin reports whether t is a plain Go type (its refusals are said by
// typeWords) rather than a domain type with its own decoding.
func isBuiltin(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == ""
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
	// goccy/go-json: every reader decodes every envelope, and the standard
	// decoder cost a simtest run 7 % of its CPU here (an envelope holds
	// strings, times and an integer; its data stays raw).
	if err := gojson.Unmarshal(data, &ev); err != nil {
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
