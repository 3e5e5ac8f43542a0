package replay

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
)

// MaxArrived is the last arrived-% point of a curve (130% of capacity).
const MaxArrived = 130

// Point is a curve's measures at one arrived % of cluster GPU capacity.
type Point struct {
	Arrived int
	// Alloc is the allocated GPU share, % of capacity.
	Alloc float64
	// Frag is F(M), % of capacity.
	Frag float64
	// FragRatio is F(M) as % of the idle GPU share.
	FragRatio float64
	// Events is how many pod events the point averages (0: no data).
	Events int
}

// round2 rounds to two decimals as Python's round(x, 2) does: the exact
// binary value, ties to even.
func round2(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 2, 64), 64)
	return v
}

// Curve turns a replay's events into the published curves' points 0..130,
// as the FGD repository's analysis scripts do (POLICIES.md §5): each event
// gets arrived% = round-half-even(arrived / 1% of capacity) and alloc% and
// the frag ratio rounded to 2 decimals; a point averages the events at its
// arrived%, or when there are none those within one of it; alloc and frag
// are rounded to 2 decimals, the ratio is not.
func Curve(events []Event, capacityMilli int64) []Point {
	onePct := float64(capacityMilli) / 100
	type ev struct {
		arrived      int
		alloc, ratio float64
		frag         float64
	}
	byPct := map[int][]int{}
	es := make([]ev, len(events))
	for i, e := range events {
		a := int(math.RoundToEven(float64(e.ArrivedMilli) / onePct))
		ratio := 0.0
		if e.FreeMilli > 0 {
			ratio = round2(100 * e.Frag / float64(e.FreeMilli))
		}
		es[i] = ev{arrived: a, alloc: round2(float64(e.UsedMilli) / onePct), ratio: ratio, frag: e.Frag}
		byPct[a] = append(byPct[a], i)
	}
	out := make([]Point, 0, MaxArrived+1)
	for k := 0; k <= MaxArrived; k++ {
		idx := byPct[k]
		if len(idx) == 0 {
			idx = append(append(append([]int(nil), byPct[k-1]...), byPct[k]...), byPct[k+1]...)
		}
		p := Point{Arrived: k, Events: len(idx)}
		if len(idx) > 0 {
			var alloc, frag, ratio float64
			for _, i := range idx {
				alloc += es[i].alloc
				frag += es[i].frag
				ratio += es[i].ratio
			}
			n := float64(len(idx))
			p.Alloc = round2(alloc / n)
			p.Frag = round2(100 * (frag / n) / float64(capacityMilli))
			p.FragRatio = ratio / n
		}
		out = append(out, p)
	}
	return out
}

// CurveHeader is the header of a replay's CSV output.
var CurveHeader = []string{"arrived_pct", "alloc_pct", "frag_amount_pct", "frag_ratio_pct"}

// WriteCurve writes a curve as CSV: arrived_pct,alloc_pct,frag_amount_pct,frag_ratio_pct.
func WriteCurve(w io.Writer, pts []Point) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CurveHeader); err != nil {
		return err
	}
	for _, p := range pts {
		if err := cw.Write([]string{strconv.Itoa(p.Arrived), strconv.FormatFloat(p.Alloc, 'f', 2, 64),
			strconv.FormatFloat(p.Frag, 'f', 2, 64), strconv.FormatFloat(p.FragRatio, 'f', -1, 64)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadCurve reads a curve written by WriteCurve.
func ReadCurve(r io.Reader) ([]Point, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || len(rows[0]) != len(CurveHeader) {
		return nil, fmt.Errorf("not a replay curve: the header must be %v", CurveHeader)
	}
	var out []Point
	for i, row := range rows[1:] {
		var p Point
		var err error
		if p.Arrived, err = strconv.Atoi(row[0]); err != nil {
			return nil, fmt.Errorf("line %d: arrived_pct: %v", i+2, err)
		}
		vals := []*float64{&p.Alloc, &p.Frag, &p.FragRatio}
		for j, v := range vals {
			if *v, err = strconv.ParseFloat(row[j+1], 64); err != nil {
				return nil, fmt.Errorf("line %d: %s: %v", i+2, CurveHeader[j+1], err)
			}
		}
		out = append(out, p)
	}
	return out, nil
}
