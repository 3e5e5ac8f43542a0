package model

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ThroughputTable is the measured speed of typed jobs: for each GPU model,
// job type and scale factor (how many GPUs of that model the job spans),
// the job's steps per second alone, and, for two jobs of the same scale
// factor packed on the same GPUs, each one's steps per second while they
// share them. A typed job's rate on a GPU is read here, not derived from
// the catalog's Speed; a pair the table lacks does not share a GPU.
// Gavel's simulation_throughputs.json is one such table; a user writes
// their own in the same shape (ParseThroughputs).
type ThroughputTable struct {
	alone  map[throughputKey]float64
	packed map[pairKey][2]float64
	// models are the catalog names of the table's GPU models, sorted.
	models []string
	// types are the job types the table knows, sorted.
	types []string
}

// throughputKey names one (GPU model, job type, scale factor) entry.
type throughputKey struct {
	gpu, jobType string
	scale        int
}

// pairKey names one packed pair: a job of jobType sharing its GPUs with
// one of other, both at scale.
type pairKey struct {
	gpu, jobType, other string
	scale               int
}

// Alone is a job type's steps per second at scale factor scale on GPUs of
// the catalog model gpu, alone; ok is false when the table has no entry.
// A rate of 0 means the job cannot run there.
func (t *ThroughputTable) Alone(gpu, jobType string, scale int) (rate float64, ok bool) {
	rate, ok = t.alone[throughputKey{gpu, jobType, scale}]
	return rate, ok
}

// Packed is the pair's steps per second while a job of jobType and one of
// other share the same GPUs of model gpu at scale factor scale: rates[0]
// the first's, rates[1] the other's; ok is false when the table has no
// such pair (they do not share).
func (t *ThroughputTable) Packed(gpu, jobType, other string, scale int) (rates [2]float64, ok bool) {
	rates, ok = t.packed[pairKey{gpu, jobType, other, scale}]
	return rates, ok
}

// Models are the catalog names of the GPU models the table covers, sorted.
func (t *ThroughputTable) Models() []string { return slices.Clone(t.models) }

// JobTypes are the job types the table covers, sorted.
func (t *ThroughputTable) JobTypes() []string { return slices.Clone(t.types) }

// LoadThroughputs reads a throughput table file (ParseThroughputs), naming
// the file in its errors.
func LoadThroughputs(path string) (*ThroughputTable, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("throughput table: %w", err)
	}
	t, err := ParseThroughputs(data)
	if err != nil {
		return nil, fmt.Errorf("throughput table %s: %w", path, err)
	}
	return t, nil
}

// ParseThroughputs reads a throughput table in Gavel's shape:
//
//	{"<gpu model>": {"('<job type>', <scale factor>)": {"null": <steps/s alone>,
//	    "('<other type>', <scale factor>)": [<this job's steps/s>, <other's steps/s>], …}, …}, …}
//
// GPU models are catalog names or aliases (Gavel's v100, p100, k80);
// Gavel's "<model>_unconsolidated" entries, which its simulator never
// reads, are skipped. Rates must be finite and not negative.
func ParseThroughputs(data []byte) (*ThroughputTable, error) {
	var raw map[string]map[string]map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not a throughput table (GPU model → \"('job type', scale)\" → \"null\" or a packed pair): %w", err)
	}
	t := &ThroughputTable{alone: map[throughputKey]float64{}, packed: map[pairKey][2]float64{}}
	types := map[string]bool{}
	for gpuName, jobs := range raw {
		if strings.HasSuffix(gpuName, "_unconsolidated") {
			continue
		}
		gpu, err := LookupModel(gpuName)
		if err != nil {
			return nil, fmt.Errorf("GPU model %q: %w", gpuName, err)
		}
		if slices.Contains(t.models, gpu.Name) {
			return nil, fmt.Errorf("GPU model %q: %s is in the table twice", gpuName, gpu.Name)
		}
		t.models = append(t.models, gpu.Name)
		for jobKey, entries := range jobs {
			jobType, scale, err := parseJobKey(jobKey)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", gpuName, err)
			}
			types[jobType] = true
			for other, value := range entries {
				where := fmt.Sprintf("%s %s %s", gpuName, jobKey, other)
				if other == "null" {
					var rate float64
					if err := json.Unmarshal(value, &rate); err != nil || !validRate(rate) {
						return nil, fmt.Errorf("%s: the rate alone must be a number of steps per second ≥ 0, not %s", where, value)
					}
					t.alone[throughputKey{gpu.Name, jobType, scale}] = rate
					continue
				}
				otherType, otherScale, err := parseJobKey(other)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", gpuName, jobKey, err)
				}
				if otherScale != scale {
					return nil, fmt.Errorf("%s: a packed pair shares the same GPUs, so both scale factors must be %d", where, scale)
				}
				var rates []float64
				if err := json.Unmarshal(value, &rates); err != nil || len(rates) != 2 || !validRate(rates[0]) || !validRate(rates[1]) {
					return nil, fmt.Errorf("%s: a packed pair is [this job's steps/s, the other's steps/s], both ≥ 0, not %s", where, value)
				}
				t.packed[pairKey{gpu.Name, jobType, otherType, scale}] = [2]float64{rates[0], rates[1]}
			}
		}
	}
	if len(t.alone) == 0 {
		return nil, fmt.Errorf("the table has no rate alone (\"null\") for any job")
	}
	slices.Sort(t.models)
	for jt := range types {
		t.types = append(t.types, jt)
	}
	slices.Sort(t.types)
	return t, nil
}

// validRate is a rate a table may hold: finite and not negative.
func validRate(r float64) bool { return r >= 0 && !math.IsInf(r, 0) && !math.IsNaN(r) }

// parseJobKey reads Gavel's job key, the Python tuple "('<type>', <scale>)".
func parseJobKey(key string) (jobType string, scale int, err error) {
	bad := fmt.Errorf("job key %q is not \"('<job type>', <scale factor>)\"", key)
	if !strings.HasPrefix(key, "('") || !strings.HasSuffix(key, ")") {
		return "", 0, bad
	}
	body := strings.TrimSuffix(strings.TrimPrefix(key, "('"), ")")
	cut := strings.LastIndex(body, "', ")
	if cut < 0 {
		return "", 0, bad
	}
	scale, convErr := strconv.Atoi(body[cut+3:])
	if convErr != nil || scale < 1 || body[:cut] == "" {
		return "", 0, bad
	}
	return body[:cut], scale, nil
}

// JobKey is Gavel's spelling of a (job type, scale factor) key, the one
// ParseThroughputs reads.
func JobKey(jobType string, scale int) string {
	return fmt.Sprintf("('%s', %d)", jobType, scale)
}
