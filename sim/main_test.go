package sim

import (
	"os"
	"testing"

	"github.com/gpusched/gpusched/policy"
)

func TestMain(m *testing.M) {
	// Every decision checks the scheduler's index against a scan (see
	// policy.VerifyIndex).
	policy.VerifyIndex = true
	os.Exit(m.Run())
}
