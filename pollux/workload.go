package pollux

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ReadWorkload reads a workload CSV: name,time,application,num_replicas,
// batch_size, one job per row in submission order.
func ReadWorkload(path string) ([]Spec, error) {
	rows, err := readCSV(path, "name", "time", "application", "num_replicas", "batch_size")
	if err != nil {
		return nil, err
	}
	specs := make([]Spec, len(rows))
	seen := map[string]bool{}
	for i, r := range rows {
		s := Spec{Name: r[0], App: r[2]}
		var e1, e2, e3 error
		s.Submit, e1 = strconv.Atoi(r[1])
		s.Replicas, e2 = strconv.Atoi(r[3])
		s.Batch, e3 = strconv.Atoi(r[4])
		for _, err := range []error{e1, e2, e3} {
			if err != nil {
				return nil, fmt.Errorf("%s row %d: %w", path, i+2, err)
			}
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("%s row %d: job %s named twice", path, i+2, s.Name)
		}
		if i > 0 && s.Submit < specs[i-1].Submit {
			return nil, fmt.Errorf("%s row %d: submitted at %d, before the row above (%d): rows go in submission order", path, i+2, s.Submit, specs[i-1].Submit)
		}
		if s.Replicas < 1 || s.Submit < 0 {
			return nil, fmt.Errorf("%s row %d: num_replicas must be at least 1 and time not negative", path, i+2)
		}
		seen[s.Name] = true
		specs[i] = s
	}
	return specs, nil
}

// LoadFolder is the workload folder of a relative load: workloads/ for
// 1.0, else workloads-<load>/ with the load as written with one decimal
// (workloads-0.5/, workloads-2.0/) or, when that is absent, shortest
// (workloads-2/).
func LoadFolder(dir string, load float64) string {
	if load == 1 {
		return filepath.Join(dir, "workloads")
	}
	oneDecimal := filepath.Join(dir, "workloads-"+strconv.FormatFloat(load, 'f', 1, 64))
	if _, err := os.Stat(oneDecimal); err == nil {
		return oneDecimal
	}
	if short := filepath.Join(dir, "workloads-"+strconv.FormatFloat(load, 'f', -1, 64)); short != oneDecimal {
		if _, err := os.Stat(short); err == nil {
			return short
		}
	}
	return oneDecimal
}

// Published is a results-jobload/<policy>-<load>/summary.json: per
// workload, each job's JCT, and the averages.
type Published struct {
	JCTs map[string]map[string]int `json:"jcts"`
	Avgs map[string]float64        `json:"avgs"`
}

// ReadPublished reads the published results of policy at load.
func ReadPublished(dir, policy string, load float64) (*Published, error) {
	name := fmt.Sprintf("%s-%s", policy, strconv.FormatFloat(load, 'f', 1, 64))
	path := filepath.Join(dir, "results-jobload", name, "summary.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Published
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &p, nil
}

// WorkloadNumber is N of a workload-N name or workload-N.csv path (0
// when it has none).
func WorkloadNumber(name string) int {
	base := strings.TrimSuffix(filepath.Base(name), ".csv")
	n, _ := strconv.Atoi(base[strings.LastIndex(base, "-")+1:])
	return n
}
