package sim

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/gpusched/gpusched/policy"
)

func TestMain(m *testing.M) {
	// Every decision checks the scheduler's index against a scan (see
	// policy.VerifyIndex).
	policy.VerifyIndex = true
	goleak.VerifyTestMain(m)
}
