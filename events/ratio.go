package events

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
)

// Ratio is an oversubscription ratio on the wire: a number (1 keeps every
// GPU within its compute, 2 lets it reach 200 %), or "inf" for no limit,
// since JSON has no infinity.
type Ratio float64

// MarshalJSON writes the ratio as a number, or "inf".
func (r Ratio) MarshalJSON() ([]byte, error) {
	if math.IsInf(float64(r), 1) {
		return []byte(`"inf"`), nil
	}
	return strconv.AppendFloat(nil, float64(r), 'g', -1, 64), nil
}

// UnmarshalJSON reads a number or "inf".
func (r *Ratio) UnmarshalJSON(b []byte) error {
	if string(b) == `"inf"` {
		*r = Ratio(math.Inf(1))
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return errors.New(`must be a number (1: no GPU past 100 % of its compute) or "inf"`)
	}
	*r = Ratio(f)
	return nil
}

// ParseRatio reads a ratio from a flag: a number, or "inf".
func ParseRatio(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, errors.New(`must be a number (1: no GPU past 100 % of its compute; 2: up to 200 %) or "inf", not ` + strconv.Quote(s))
	}
	return f, nil
}
