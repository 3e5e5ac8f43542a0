package bench

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/internal/tracedir"
)

// TestGavelRowsTimeTheReferenceRuns: the bench's Gavel row runs a
// reference run offline and says whether every JCT equals the
// reference's (the speed verdict is the bench's to give, not a test's).
func TestGavelRowsTimeTheReferenceRuns(t *testing.T) {
	dir := tracedir.Gavel(t)
	var table Table
	o := Options{Quick: true, Traces: filepath.Join(dir, "..", "alibaba-openb")}
	if err := gavelRows(&table, o, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 2 || !strings.Contains(table.Rows[0].Figure, "60 of 60 JCTs equal") || table.Rows[1].Verdict != "" {
		t.Fatalf("rows: %+v, want the static FIFO run with 60 of 60 JCTs equal and the paper's run skipped in --quick", table.Rows)
	}
}
