package auth

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestTheRoleTableSaysWhatTheCodeAllows (issue 22: the role × action
// matrix in the docs is checked against the permissions the code builds):
// every row of docs/SECURITY.md's role table lists exactly the subjects
// RolePermissions gives that role and the account UserAccount signs it
// into, says "the event stream's JetStream
// API" exactly when the role may read the stream, "allow_responses"
// exactly when it may answer, and "everything" only for the role that has
// no bounds.
func TestTheRoleTableSaysWhatTheCodeAllows(t *testing.T) {
	doc, err := os.ReadFile("../docs/SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z]+)`[^|]*\\| `([A-Za-z_<>]+)`[^|]*\\| ([^|]*) \\| ([^|]*) \\|$")
	code := regexp.MustCompile("`([^`]+)`")
	const prefix, node, stream = "gpusched", "N", "GPUSCHED_EVENTS"
	subjects := func(cell string) (out []string) {
		for _, m := range code.FindAllStringSubmatch(cell, -1) {
			s := strings.ReplaceAll(m[1], "<p>", prefix)
			if strings.HasPrefix(s, prefix+".") || strings.HasPrefix(s, "_INBOX") {
				out = append(out, s)
			}
		}
		slices.Sort(out)
		return out
	}
	seen := map[Role]bool{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		role, account, publish, subscribe := Role(m[1]), m[2], m[3], m[4]
		if !slices.Contains(Roles, role) {
			continue
		}
		seen[role] = true
		if want := UserAccount(User{Name: "<user>", Role: role, Tenant: "T", Node: node}); account != want {
			t.Errorf("%s signs into account %s by the code, %s by the docs", role, want, account)
		}
		perms := RolePermissions(role, prefix, node, stream)
		if perms == nil {
			if !strings.HasPrefix(publish, "everything") || !strings.HasPrefix(subscribe, "everything") {
				t.Errorf("%s: the code bounds nothing, the docs say %q / %q", role, publish, subscribe)
			}
			continue
		}
		var wantPub []string
		readsStream := false
		for _, s := range perms.Publish {
			if strings.HasPrefix(s, "$JS.") {
				readsStream = true
				continue
			}
			wantPub = append(wantPub, s)
		}
		slices.Sort(wantPub)
		wantSub := slices.Sorted(slices.Values(perms.Subscribe))
		if got := subjects(publish); !slices.Equal(got, wantPub) {
			t.Errorf("%s may publish %v by the code, %v by the docs", role, wantPub, got)
		}
		if got := subjects(subscribe); !slices.Equal(got, wantSub) {
			t.Errorf("%s may subscribe to %v by the code, %v by the docs", role, wantSub, got)
		}
		if says := strings.Contains(publish, "the event stream's JetStream API"); says != readsStream {
			t.Errorf("%s: reads the event stream by the code: %v; by the docs: %v", role, readsStream, says)
		}
		if says := strings.Contains(publish, "allow_responses"); says != perms.Responses {
			t.Errorf("%s: answers requests by the code: %v; by the docs: %v", role, perms.Responses, says)
		}
	}
	for _, r := range Roles {
		if !seen[r] {
			t.Errorf("docs/SECURITY.md's role table has no row for %s", r)
		}
	}
}
