package model

import (
	"fmt"
	"math"
	"time"
)

// FieldError is a rejected request: the JSON field at fault (empty for the
// body as a whole) and a message a person understands.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error implements error.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Errorf builds a FieldError for field.
func Errorf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// CoresToMilli converts cores to thousandths of a core, rounded.
func CoresToMilli(cores float64) int64 { return int64(math.Round(cores * 1000)) }

// KeptProgress is the work a job keeps when stopped after done seconds of
// work with the given checkpoint interval: everything up to its last
// checkpoint, or nothing when it never checkpoints.
func KeptProgress(done float64, checkpoint time.Duration) float64 {
	c := checkpoint.Seconds()
	if c <= 0 || done <= 0 {
		return 0
	}
	return float64(int64(done/c)) * c
}
