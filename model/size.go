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

// Units of memory, in bytes. Memory is counted as its makers, nvidia-smi,
// the ML frameworks and the reference demo count it (JEDEC's convention
// for memory): a gigabyte is 2^30 bytes, so an "A100 40GB" has 40 GB and a
// job of 38 GB shows as 38/40 on it. GB and GiB are the same unit, and so
// on: one unit system on every screen, in every message and in every input.
const (
	KB Bytes = 1 << 10
	MB Bytes = 1 << 20
	GB Bytes = 1 << 30
	TB Bytes = 1 << 40
	// KiB, MiB, GiB and TiB are the IEC names of the same units.
	KiB = KB
	MiB = MB
	GiB = GB
	TiB = TB
)

// sizeUnits maps every accepted suffix to its multiplier: GB and GiB alike
// are 2^30 bytes (see GB).
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

// units are the units sizes are written in, largest first.
var units = []struct {
	size Bytes
	name string
}{{TB, "TB"}, {GB, "GB"}, {MB, "MB"}, {KB, "KB"}}

// String formats the size in the largest unit that keeps it readable, to
// two decimals at most ("38GB", "18.63GB", "512MB").
func (b Bytes) String() string {
	for _, u := range units {
		if b >= u.size {
			return trimFloat(float64(b)/float64(u.size)) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// Exact formats the size in the largest unit that divides it ("38GB",
// "1536MB", "1000B"), so that ParseBytes reads back the same number of
// bytes: the form a submission writes.
func (b Bytes) Exact() string {
	for _, u := range units {
		if b != 0 && b%u.size == 0 {
			return strconv.FormatInt(int64(b/u.size), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// GBString formats the size in gigabytes as tables show it: whole from
// 10 GB, else to one decimal ("38GB", "7.5GB").
func (b Bytes) GBString() string { return b.GBNumber() + "GB" }

// GBNumber is GBString without its unit, for a column headed GB ("38/40").
func (b Bytes) GBNumber() string {
	g := float64(b) / float64(GB)
	if g >= 10 {
		return strconv.FormatFloat(g, 'f', 0, 64)
	}
	return trimFloat(math.Round(g*10) / 10)
}

// plainJSONString says whether b, the inside of a JSON string, holds no
// escape, quote, control character or non-ASCII byte: its bytes are then
// the string (anything else is left to encoding/json, which checks UTF-8).
func plainJSONString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

func trimFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// UnmarshalJSON accepts a size string ("12GB") or a JSON number of bytes.
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
		// A plain string (no escape, no control character) is its bytes:
		// the common case, on every job of every GPU status decoded.
		if n := len(data); n >= 2 && data[n-1] == '"' && plainJSONString(data[1:n-1]) {
			return string(data[1 : n-1]), nil
		}
		var s string
		err := json.Unmarshal(data, &s)
		return s, err
	}
	return string(data), nil
}
