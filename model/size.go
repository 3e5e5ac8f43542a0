package model

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bytes is an amount of memory in bytes.
type Bytes int64

// Common IEC and SI units, in bytes.
const (
	KiB Bytes = 1 << 10
	MiB Bytes = 1 << 20
	GiB Bytes = 1 << 30
	TiB Bytes = 1 << 40
	KB  Bytes = 1e3
	MB  Bytes = 1e6
	GB  Bytes = 1e9
	TB  Bytes = 1e12
)

// sizeUnits maps every accepted suffix to its multiplier. Sizes follow SI
// and IEC strictly: "GB" is 10^9 bytes and "GiB" is 2^30 bytes.
var sizeUnits = map[string]Bytes{
	"B": 1, "KB": KB, "MB": MB, "GB": GB, "TB": TB,
	"KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB,
}

// ParseBytes parses a size such as "20GB", "38GiB", "512MiB", "1.5GiB" or a
// plain number of bytes. Negative, empty and unknown-unit sizes are errors.
func ParseBytes(s string) (Bytes, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty size")
	}
	i := 0
	for i < len(s) && (s[i] == '.' || s[i] == '-' || s[i] == '+' || (s[i] >= '0' && s[i] <= '9')) {
		i++
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (want a number with a unit such as 20GB, 38GiB or 512MiB)", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	mult := Bytes(1)
	if unit != "" {
		m, ok := sizeUnits[unit]
		if !ok {
			return 0, fmt.Errorf("unknown unit %q in size %q (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", unit, s)
		}
		mult = m
	}
	b := v * float64(mult)
	if b > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return Bytes(math.Round(b)), nil
}

// String formats the size in the largest IEC unit that keeps it readable.
func (b Bytes) String() string {
	switch {
	case b >= TiB:
		return trimFloat(float64(b)/float64(TiB)) + "TiB"
	case b >= GiB:
		return trimFloat(float64(b)/float64(GiB)) + "GiB"
	case b >= MiB:
		return trimFloat(float64(b)/float64(MiB)) + "MiB"
	case b >= KiB:
		return trimFloat(float64(b)/float64(KiB)) + "KiB"
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// Exact formats the size in the largest unit that divides it, SI or IEC
// ("38GB", "12GiB", "1536MiB", "1000B"), so that ParseBytes reads back the
// same number of bytes: the form a submission writes.
func (b Bytes) Exact() string {
	for _, u := range []struct {
		size Bytes
		name string
	}{{TiB, "TiB"}, {TB, "TB"}, {GiB, "GiB"}, {GB, "GB"}, {MiB, "MiB"}, {MB, "MB"}, {KiB, "KiB"}, {KB, "KB"}} {
		if b != 0 && b%u.size == 0 {
			return strconv.FormatInt(int64(b/u.size), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// GBString formats the size in SI gigabytes with one decimal, as dashboards show it.
func (b Bytes) GBString() string {
	return strconv.FormatFloat(float64(b)/float64(GB), 'f', 1, 64) + "GB"
}

func trimFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// UnmarshalJSON accepts a size string ("12GiB") or a JSON number of bytes.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	s, err := jsonScalar(data)
	if err != nil {
		return err
	}
	v, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// jsonScalar returns a JSON string's contents, or any other JSON value's
// text (a number), for types that accept both "12GiB" and 1024.
func jsonScalar(data []byte) (string, error) {
	if len(data) > 0 && data[0] == '"' {
		var s string
		err := json.Unmarshal(data, &s)
		return s, err
	}
	return string(data), nil
}
