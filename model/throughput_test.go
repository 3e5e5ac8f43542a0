package model

import (
	"strings"
	"testing"
)

func TestParseThroughputs(t *testing.T) {
	table, err := ParseThroughputs([]byte(`{
		"v100": {"('A', 1)": {"null": 10, "('B', 1)": [6, 3]}, "('B', 1)": {"null": 4}, "('A', 2)": {"null": 18}},
		"K80-12GB": {"('A', 1)": {"null": 2}},
		"v100_unconsolidated": {"('A', 1)": {"null": 99}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := table.Alone("V100-16GB", "A", 2); !ok || r != 18 {
		t.Errorf("Alone(V100-16GB, A, 2) = %v %v, want 18 (v100 is the V100-16GB)", r, ok)
	}
	if r, ok := table.Alone("K80-12GB", "A", 1); !ok || r != 2 {
		t.Errorf("Alone(K80-12GB, A, 1) = %v %v", r, ok)
	}
	if r, ok := table.Packed("V100-16GB", "A", "B", 1); !ok || r != [2]float64{6, 3} {
		t.Errorf("Packed(A, B) = %v %v", r, ok)
	}
	if _, ok := table.Packed("V100-16GB", "B", "A", 1); ok {
		t.Error("a pair the table lacks (B with A) shares a GPU")
	}
	if got := strings.Join(table.Models(), ","); got != "K80-12GB,V100-16GB" {
		t.Errorf("Models = %s: the _unconsolidated entry was read", got)
	}
	for body, want := range map[string]string{
		`{"Z99": {"('A', 1)": {"null": 1}}}`:                      `GPU model "Z99"`,
		`{"v100": {"A-1": {"null": 1}}}`:                          `job key "A-1"`,
		`{"v100": {"('A', 1)": {"null": -1}}}`:                    `rate alone`,
		`{"v100": {"('A', 1)": {"null": 1, "('B', 2)": [1, 1]}}}`: `both scale factors must be 1`,
		`{"v100": {"('A', 1)": {"null": 1, "('B', 1)": [1]}}}`:    `packed pair`,
		`[1, 2]`: `not a throughput table`,
	} {
		if _, err := ParseThroughputs([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %s", body, err, want)
		}
	}
}
