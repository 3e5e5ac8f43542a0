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

// TestTenantLimitsCountCPUAndMemory (issue 42 item 6): cpu and memory
// limits parse, write back, refuse a job larger than the limit at
// submission (naming its field) and hold one back while the tenant holds
// too much.
func TestTenantLimitsCountCPUAndMemory(t *testing.T) {
	l, err := ParseTenantLimits("team-a=gpus:2,cpu:8,memory:64GiB")
	if err != nil {
		t.Fatal(err)
	}
	if back, err := ParseTenantLimits(l.String()); err != nil || back["team-a"].MaxMemory != l["team-a"].MaxMemory || back["team-a"].MaxCPUMilli != 8000 {
		t.Errorf("written back as %q, which reads as %+v (%v)", l.String(), back, err)
	}
	if st := l.Submit(&AdmitJob{Tenant: "team-a", CPUMilli: 9000}); st == nil || st.Field != "cpu" {
		t.Errorf("a 9-core job under cpu:8: %+v, want a refusal naming cpu", st)
	}
	if st := l.Submit(&AdmitJob{Tenant: "team-a", Memory: int64(65 * model.GiB)}); st == nil || st.Field != "memory" {
		t.Errorf("a 65 GiB job under memory:64GiB: %+v, want a refusal naming memory", st)
	}
	if st := l.Place(&AdmitJob{Tenant: "team-a", CPUMilli: 4000}, Usage{CPUMilli: 6000}); st == nil || !strings.Contains(st.Reason, "holds 6 of the 8 CPU cores") {
		t.Errorf("4 more cores beside 6 of 8: %+v, want a wait saying why", st)
	}
	if st := l.Place(&AdmitJob{Tenant: "team-a", GPUs: 1, CPUMilli: 1000}, Usage{GPUs: 1, CPUMilli: 6000}); st != nil {
		t.Errorf("1 GPU and 1 core beside 1 of 2 and 6 of 8: %v, want placed", st)
	}
	for _, bad := range []string{"team-a=cpu:0", "team-a=cpu:x", "team-a=memory:-1", "team-a=memory:lots"} {
		if _, err := ParseTenantLimits(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}
