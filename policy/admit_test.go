package policy

import (
	"strings"
	"testing"

	"github.com/gpusched/gpusched/model"
)

// TestTenantLimits: a tenant's highest priority and its GPUs bound are
// checked at submission (what can never change) and at placement (what
// its running jobs hold now); the catch-all covers unnamed tenants.
func TestTenantLimits(t *testing.T) {
	l, err := ParseTenantLimits("team-a=gpus:4,priority:medium; *=gpus:2")
	if err != nil {
		t.Fatal(err)
	}
	if got := l.String(); got != "*=gpus:2;team-a=gpus:4,priority:medium" {
		t.Fatalf("limits read back as %q", got)
	}
	for _, tc := range []struct {
		job   AdmitJob
		field string
	}{
		{AdmitJob{Tenant: "team-a", Priority: model.PriorityHigh, GPUs: 1}, "priority"},
		{AdmitJob{Tenant: "team-a", Priority: model.PriorityMedium, GPUs: 5}, "gpus"},
		{AdmitJob{Tenant: "team-a", Priority: model.PriorityMedium, GPUs: 4}, ""},
		{AdmitJob{Tenant: "other", Priority: 9000, GPUs: 2}, ""},
		{AdmitJob{Tenant: "other", Priority: 1, GPUs: 3}, "gpus"},
	} {
		fe := l.Submit(&tc.job)
		if (fe == nil) != (tc.field == "") || (fe != nil && fe.Field != tc.field) {
			t.Errorf("%+v: %v, want a refusal on %q", tc.job, fe, tc.field)
		}
	}
	a := &AdmitJob{Tenant: "team-a", GPUs: 2}
	if st := l.Place(a, Usage{GPUs: 2}); st != nil {
		t.Errorf("2 held + 2 of 4: %v, want placed", st)
	}
	if st := l.Place(a, Usage{GPUs: 3}); st == nil || st.Code != Wait || !strings.Contains(st.Reason, "holds 3 of the 4 GPUs") {
		t.Errorf("3 held + 2 of 4: %+v, want a wait saying why", st)
	}
	if st := (TenantLimits{}).Place(a, Usage{GPUs: 100}); st != nil {
		t.Errorf("no limits: %v", st)
	}
	for _, bad := range []string{"team-a", "team-a=gpus:0", "team-a=gpus:x", "team-a=priority:urgent", "team-a=colour:red", "a=gpus:1;a=gpus:2", "=gpus:1"} {
		if _, err := ParseTenantLimits(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}
