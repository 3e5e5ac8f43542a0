package gavel

import "math"

// assign solves the rectangular assignment problem — every row a distinct
// column, least total cost — for rows ≤ columns, and returns each row's
// column. It is the shortest-augmenting-path method (Crouse 2016) as
// scipy 1.10's linear_sum_assignment runs it (MODEL.md §7.3a), with its
// scan order and tie-breaks, because AlloX's costs tie often and the
// reference's choice among equal optima decides which job runs first.
// Costs are used as given. ok is false when no assignment exists (a row
// with every cost infinite).
func assign(cost [][]float64, cols int) (rowCol []int, ok bool) {
	rows := len(cost)
	u := make([]float64, rows)
	v := make([]float64, cols)
	spc := make([]float64, cols) // shortest path cost to each column
	path := make([]int, cols)
	col4row := make([]int, rows)
	row4col := make([]int, cols)
	for i := range col4row {
		col4row[i] = -1
	}
	for j := range cols {
		row4col[j], path[j] = -1, -1
	}
	remaining := make([]int, cols)
	inSR := make([]bool, rows)
	inSC := make([]bool, cols)
	for cur := range rows {
		// Search for the shortest augmenting path from row cur.
		for it := range cols {
			remaining[it] = cols - it - 1
			spc[it] = math.Inf(1)
			inSC[it] = false
		}
		for i := range inSR {
			inSR[i] = false
		}
		numRemaining := cols
		minVal := 0.0
		i, sink := cur, -1
		for sink == -1 {
			inSR[i] = true
			index, lowest := -1, math.Inf(1)
			for it := range numRemaining {
				j := remaining[it]
				r := ((minVal + cost[i][j]) - u[i]) - v[j]
				if r < spc[j] {
					path[j] = i
					spc[j] = r
				}
				if spc[j] < lowest || (spc[j] == lowest && row4col[j] == -1) {
					lowest = spc[j]
					index = it
				}
			}
			minVal = lowest
			if math.IsInf(minVal, 1) || index < 0 {
				return nil, false
			}
			j := remaining[index]
			if row4col[j] == -1 {
				sink = j
			} else {
				i = row4col[j]
			}
			inSC[j] = true
			numRemaining--
			remaining[index] = remaining[numRemaining]
		}
		// Update the duals.
		u[cur] += minVal
		for k := range rows {
			if inSR[k] && k != cur {
				u[k] += minVal - spc[col4row[k]]
			}
		}
		for j := range cols {
			if inSC[j] {
				v[j] -= minVal - spc[j]
			}
		}
		// Augment along the path.
		for j := sink; ; {
			k := path[j]
			row4col[j] = k
			col4row[k], j = j, col4row[k]
			if k == cur {
				break
			}
		}
	}
	return col4row, true
}
