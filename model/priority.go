package model

import (
	"fmt"
	"strconv"
	"strings"
)

// Priority orders jobs: higher wins. The named levels are the demo's.
type Priority int

// Named priority levels.
const (
	PriorityLow    Priority = 1
	PriorityMedium Priority = 2
	PriorityHigh   Priority = 3
)

// ParsePriority accepts "high", "medium", "low" (any case) or an integer.
func ParsePriority(s string) (Priority, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "high":
		return PriorityHigh, nil
	case "medium":
		return PriorityMedium, nil
	case "low":
		return PriorityLow, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("unknown priority %q (use high, medium, low or an integer)", s)
	}
	return Priority(n), nil
}

// String names the level when it has a name, else prints the integer.
func (p Priority) String() string {
	switch p {
	case PriorityHigh:
		return "high"
	case PriorityMedium:
		return "medium"
	case PriorityLow:
		return "low"
	}
	return strconv.Itoa(int(p))
}

// UnmarshalJSON accepts a level name or an integer (as a number or a string).
func (p *Priority) UnmarshalJSON(data []byte) error {
	s, err := jsonScalar(data)
	if err != nil {
		return err
	}
	v, err := ParsePriority(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// MarshalJSON writes the level name, or the integer when it has none.
func (p Priority) MarshalJSON() ([]byte, error) {
	switch p {
	case PriorityHigh, PriorityMedium, PriorityLow:
		return []byte(`"` + p.String() + `"`), nil
	}
	return []byte(strconv.Itoa(int(p))), nil
}
