package report

import (
	"testing"

	"gonum.org/v1/plot/plotter"
)

// TestPlotsReadable (issue 24 item 10): a JCT axis has about eight
// labelled ticks, not three; a distribution's legend sits bottom right,
// off its curves; a published curve that ours lies on is said to.
func TestPlotsReadable(t *testing.T) {
	ticks := niceTicks{}.Ticks(0, 13.2)
	if len(ticks) < 6 || ticks[0].Value != 0 || ticks[1].Value != 2 || ticks[1].Label != "2" {
		t.Fatalf("ticks of 0–13.2 h: %+v, want 0, 2, 4, … labelled", ticks)
	}
	if small := (niceTicks{}).Ticks(0.1, 0.45); len(small) < 6 || small[0].Label != "0.1" {
		t.Fatalf("ticks of 0.1–0.45: %+v", small)
	}
	for _, tk := range (niceTicks{}).Ticks(0, 1) {
		if len(tk.Label) > 3 {
			t.Fatalf("ticks of 0–1: label %q, want 0.6 not 3 × 0.2's float", tk.Label)
		}
	}
	if p := cdfPlot("x"); p.Legend.Top {
		t.Fatal("a CDF's legend is at the top, over the curves' ends")
	}
	a := plotter.XYs{{X: 10, Y: 5}, {X: 20, Y: 9}}
	if !sameCurve(a, plotter.XYs{{X: 10, Y: 5.01}, {X: 20, Y: 9}}) || sameCurve(a, plotter.XYs{{X: 10, Y: 5.5}, {X: 20, Y: 9}}) ||
		sameCurve(a, plotter.XYs{{X: 15, Y: 5}}) {
		t.Fatal("sameCurve: coinciding curves not told from different ones")
	}
}
