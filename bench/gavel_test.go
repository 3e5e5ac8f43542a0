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
	// The quick table times the static FIFO run offline and live (each must
	// reproduce all 60 JCTs; the verdict is a speed target and depends on the
	// machine) and skips the paper's run.
	if len(table.Rows) != 3 ||
		!strings.Contains(table.Rows[0].Case, "offline") || !strings.Contains(table.Rows[0].Figure, "60 of 60 JCTs equal") ||
		!strings.Contains(table.Rows[1].Case, "live") || !strings.Contains(table.Rows[1].Figure, "60 of 60 JCTs equal") ||
		table.Rows[2].Verdict != "" || !strings.Contains(table.Rows[2].Figure, "skipped") {
		t.Fatalf("rows: %+v, want the static FIFO run offline and live with 60 of 60 JCTs equal and the paper's run skipped in --quick", table.Rows)
	}
}

// TestPALRowsTimeTheReferenceRuns (issue 44): the PAL rows time two
// reference runs offline and the full one live, each reproducing every
// JCT (the verdict is a speed target and depends on the machine).
func TestPALRowsTimeTheReferenceRuns(t *testing.T) {
	dir := tracedir.PAL(t)
	var table Table
	o := Options{Quick: true, Traces: filepath.Join(dir, "..", "alibaba-openb")}
	if err := palRows(&table, o, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 3 || !strings.Contains(table.Rows[0].Figure, "54 of 54 JCTs equal") ||
		!strings.Contains(table.Rows[1].Figure, "160 of 160 JCTs equal") || !strings.Contains(table.Rows[2].Case, "live") || !strings.Contains(table.Rows[2].Figure, "160 of 160 JCTs equal") {
		t.Fatalf("rows: %+v", table.Rows)
	}
	for _, r := range table.Rows {
		t.Logf("%s: %s", r.Case, r.Figure)
	}
}
