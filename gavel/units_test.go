package gavel

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/model"
)

// TestAssignBreaksTiesAsScipy: a constant matrix gives the identity (the
// reverse column scan and "last unassigned among equal minima" of
// scipy's solver), and a matrix with one optimum finds it.
func TestAssignBreaksTiesAsScipy(t *testing.T) {
	flat := [][]float64{{1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}}
	if got, ok := assign(flat, 4); !ok || !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("constant 3×4: %v %v, want [0 1 2]", got, ok)
	}
	cost := [][]float64{{4, 1, 3}, {2, 0, 5}, {3, 2, 2}}
	if got, ok := assign(cost, 3); !ok || !slices.Equal(got, []int{1, 0, 2}) {
		t.Errorf("3×3: %v %v, want [1 0 2] (cost 5)", got, ok)
	}
}

func TestPyFloatPrintsAsPython(t *testing.T) {
	for f, want := range map[float64]string{0: "0.0", 1304.459055521608: "1304.459055521608", 100: "100.0",
		1e16: "1e+16", 1.5e-5: "1.5e-05", 0.0001: "0.0001", 12345678901234567: "1.2345678901234568e+16"} {
		if got := pyFloat(f); got != want {
			t.Errorf("pyFloat(%v) = %s, Python %s", f, got, want)
		}
	}
}

// TestPairwiseSumIsNumpys: numpy's blocked sum differs from a running sum
// in the last bits; 0.1 ten times shows it (numpy: 1.0, a loop:
// 0.9999999999999999).
func TestPairwiseSumIsNumpys(t *testing.T) {
	ten := make([]float64, 10)
	for i := range ten {
		ten[i] = 0.1
	}
	if got := pairwiseSum(ten); got != 1.0 {
		t.Errorf("pairwiseSum(0.1 × 10) = %v, numpy 1.0", got)
	}
}

// smallData is a two-type table of the project's own: job a runs at 2
// steps/s on V100 and 1 on K80, b at 1 and 1, packed at half speed each.
func smallData(t *testing.T) *Data {
	t.Helper()
	table, err := model.ParseThroughputs([]byte(`{
		"v100": {"('a', 1)": {"null": 2, "('b', 1)": [1, 0.5]}, "('b', 1)": {"null": 1, "('a', 1)": [0.5, 1]}},
		"p100": {"('a', 1)": {"null": 1}, "('b', 1)": {"null": 1}},
		"k80": {"('a', 1)": {"null": 1}, "('b', 1)": {"null": 1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewData([]Template{{Name: "a"}, {Name: "b"}}, table)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestFIFOGivesTheLastTypeNotTheDrawnOne: the reference's quirk — a queued
// job gets the alphabetically last type with room (v100), whatever type
// was drawn, and the drawn type leaves the list when v100 fills; so the
// first job always gets the one V100, and when the draw was another type,
// v100 stays in the list with no room and the next jobs get it too
// (oversubscribed) while the P100 stays free.
func TestFIFOGivesTheLastTypeNotTheDrawnOne(t *testing.T) {
	d := smallData(t)
	v := &View{Counts: [numTypes]int{K80: 1, P100: 1, V100: 1}, data: d}
	for id := range 3 {
		v.Jobs = append(v.Jobs, JobView{ID: id, Scale: 1, Rates: [numTypes]float64{1, 1, 2}, Remaining: 100})
	}
	oversubscribed := 0
	for seed := range uint64(20) {
		x := newFIFO(seed).Allocate(v)
		if got := x[Single(0)]; got != [numTypes]float64{V100: 1} {
			t.Fatalf("seed %d: job 0's allocation %v, want v100", seed, got)
		}
		if x[Single(1)][V100] == 1 {
			oversubscribed++
		}
	}
	if oversubscribed == 0 || oversubscribed == 20 {
		t.Errorf("job 1 on the one V100 for %d of 20 seeds: the drawn type decides, so some seeds and not others", oversubscribed)
	}
}

// TestAPairRunsAtItsPackedRates: a round of a packed pair advances each
// member at the table's packed rate and the pair finishes with its slower
// member.
func TestAPairRunsAtItsPackedRates(t *testing.T) {
	d := smallData(t)
	r := NewRounds(d, [numTypes]int{V100: 1}, newGandiva(0), 0)
	r.Add(Job{ID: 0, Template: 0, Type: "a", Scale: 1, TotalSteps: 1000})
	r.Add(Job{ID: 1, Template: 1, Type: "b", Scale: 1, TotalSteps: 90})
	task := Task{ID: Pair(0, 1), Type: V100}
	r.work(0, &task)
	// a: 1 step/s for 360 s; b: 0.5 step/s, so its 90 steps take 180 s.
	if task.Steps != [2]float64{360, 90} || task.Finish != 360 {
		t.Errorf("pair task %+v, want steps [360 90] finishing at 360", task)
	}
}

// TestAJobThatCanNeverRunIsAnError: a measured job whose rate is 0 on
// every type the cluster has would keep the run going for ever; Run says
// so instead.
func TestAJobThatCanNeverRunIsAnError(t *testing.T) {
	table, err := model.ParseThroughputs([]byte(`{
		"v100": {"('a', 1)": {"null": 2}}, "p100": {"('a', 1)": {"null": 1}}, "k80": {"('a', 1)": {"null": 0}}}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewData([]Template{{Name: "a"}}, table)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), d, Config{Policy: "isolated", Counts: [numTypes]int{K80: 4}, WindowEnd: 3})
	if err == nil || !strings.Contains(err.Error(), "can never run") {
		t.Fatalf("error %v, want one saying job 0 can never run", err)
	}
}
