package auth_test

import (
	"crypto/tls"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/internal/testbus"
)

// TestParseNamesTheUserAndField: a bad roles file is refused with the user
// and the field at fault.
func TestParseNamesTheUserAndField(t *testing.T) {
	key := func() string {
		u, _, err := auth.NewUser("x", auth.Admin, "", "")
		if err != nil {
			t.Fatal(err)
		}
		return u.NKey
	}
	k1 := key()
	cases := map[string]string{
		"users: []": "no users",
		"users: [{name: a, role: boss, nkey: " + k1 + "}]":                                               `user "a": role: unknown role "boss"`,
		"users: [{name: a, role: submitter, nkey: " + k1 + "}]":                                          `user "a": tenant`,
		"users: [{name: a, role: node, nkey: " + k1 + "}]":                                               `user "a": node`,
		"users: [{name: a, role: admin, tenant: t, nkey: " + k1 + "}]":                                   `user "a": tenant`,
		"users: [{name: a, role: admin}]":                                                                `user "a": give nkey or password`,
		"users: [{name: a, role: admin, nkey: SUABC}]":                                                   `user "a": nkey "SUABC": not a user's public nkey`,
		"users: [{name: a, role: admin, nkey: " + k1 + "}, {name: a, role: observer, password: p}]":      `user "a": name: given twice`,
		"users: [{name: a, role: admin, nkey: " + k1 + "}, {name: b, role: observer, nkey: " + k1 + "}]": `user "b": nkey: the same key as user "a"`,
		"users: [{name: a.b, role: admin, nkey: " + k1 + "}]":                                            `name: use letters`,
		"users: [{name: a, role: admin, nkey: " + k1 + ", colour: red}]":                                 "field colour not found",
	}
	for file, want := range cases {
		_, err := auth.Parse([]byte(file))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", file, err, want)
		}
	}
}

// TestCallerTenant: the tenant comes from the account the server names in
// Nats-Request-Info; no header (no import crossed) is the control account.
func TestCallerTenant(t *testing.T) {
	tenants := map[string]string{auth.TenantAccount("team-a"): "team-a"}
	h := func(acc string) nats.Header {
		return nats.Header{auth.RequestInfoHeader: []string{fmt.Sprintf(`{"acc":%q,"rtt":1000}`, acc)}}
	}
	for _, c := range []struct {
		header  nats.Header
		tenants map[string]string
		want    string
		err     string
	}{
		{nil, tenants, "", ""},
		{h(auth.ControlAccount), tenants, "", ""},
		{h(auth.TenantAccount("team-a")), tenants, "team-a", ""},
		{h("SOMEONE"), tenants, "", `account "SOMEONE" is not a tenant`},
		{nats.Header{auth.RequestInfoHeader: []string{"{"}}, tenants, "", "does not decode"},
		// No roles file: a request through another account's import is
		// refused (whose is it?); one without the header is served.
		{h(auth.TenantAccount("team-a")), nil, "", "no roles file"},
		{nil, nil, "", ""},
	} {
		got, err := auth.CallerTenant(c.header, c.tenants)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%v with %v: %q, %v; want %q, %q", c.header, c.tenants, got, err, c.want, c.err)
		}
	}
}

// TestInitWritesAWorkingSet: `cluster auth init`'s files load, the roles
// file checks, the seeds are private, and the NATS configuration it wrote
// for an external server is one nats-server accepts.
func TestInitWritesAWorkingSet(t *testing.T) {
	dir := t.TempDir()
	out, err := auth.Init(auth.InitOptions{Dir: dir, Prefix: "gpusched", EventStream: "GPUSCHED_EVENTS",
		Tenants: []string{"team-a", "team-b"}, Nodes: []string{"box1"}, Hosts: []string{"127.0.0.1"}, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := auth.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Users) != 6 || f.Tenants()[auth.TenantAccount("team-b")] != "team-b" {
		t.Fatalf("users %+v", f.Users)
	}
	for name, seed := range out.Seeds {
		st, err := os.Stat(seed)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s's seed %s: %v %v, want mode 0600", name, seed, err, st.Mode())
		}
	}
	if _, err := auth.Init(auth.InitOptions{Dir: dir, Now: time.Now()}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("a second init over the first: %v, want a refusal naming --force", err)
	}
	// --force over files someone made readable to all puts the modes back
	// (os.WriteFile alone keeps an existing file's mode).
	for _, seed := range out.Seeds {
		os.Chmod(seed, 0o644)
	}
	roles := filepath.Join(dir, "users.yaml")
	os.Chmod(roles, 0o644)
	if _, err := auth.Init(auth.InitOptions{Dir: dir, Prefix: "gpusched", EventStream: "GPUSCHED_EVENTS", Tenants: []string{"team-a", "team-b"},
		Nodes: []string{"box1"}, Hosts: []string{"127.0.0.1"}, Now: time.Now(), Force: true}); err != nil {
		t.Fatal(err)
	}
	for _, path := range append(slices.Collect(maps.Values(out.Seeds)), roles, filepath.Join(dir, "tls", "server-key.pem")) {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s after --force: %v %v, want mode 0600", path, err, st.Mode())
		}
	}
	opts, err := server.ProcessConfigFile(out.ServerConf)
	if err != nil {
		t.Fatalf("nats-server refuses %s: %v", out.ServerConf, err)
	}
	if len(opts.Nkeys) != 6 || opts.TLSConfig == nil || opts.TLSConfig.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("%s: %d nkey users, TLS %+v", out.ServerConf, len(opts.Nkeys), opts.TLSConfig)
	}
}

// TestRoutesUseTLS: two nats-servers routed with the generated route TLS
// block form a cluster; a third whose certificate another CA signed is
// refused by both.
func TestRoutesUseTLS(t *testing.T) {
	ours := auth.NewTLSSet(t.TempDir())
	theirs := auth.NewTLSSet(t.TempDir())
	for _, set := range []auth.TLSSet{ours, theirs} {
		if err := auth.WriteSelfSigned(set, []string{"127.0.0.1", "localhost"}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	routePort := func() int { return testbus.FreePort(t) }
	p1, p2, p3 := routePort(), routePort(), routePort()
	start := func(name string, set auth.TLSSet, port int, routes ...int) *server.Server {
		var rs []string
		for _, r := range routes {
			rs = append(rs, fmt.Sprintf("%q", fmt.Sprintf("nats://127.0.0.1:%d", r)))
		}
		// As docs/SECURITY.md says: the route TLS block included in the
		// server's cluster block.
		dir := t.TempDir()
		routeTLS := auth.RouteTLSConfig(auth.TLSFiles{Cert: set.ServerCert, Key: set.ServerKey, CA: set.CA})
		if err := os.WriteFile(filepath.Join(dir, "nats-route-tls.conf"), []byte(routeTLS), 0o600); err != nil {
			t.Fatal(err)
		}
		conf := fmt.Sprintf("server_name: %s\nlisten: 127.0.0.1:-1\ncluster {\n name: gpusched\n listen: 127.0.0.1:%d\n routes: [%s]\n include nats-route-tls.conf\n}\n",
			name, port, strings.Join(rs, ", "))
		path := filepath.Join(dir, name+".conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		return testbus.StartConfig(t, path)
	}
	n1 := start("n1", ours, p1, p2)
	n2 := start("n2", ours, p2, p1)
	testbus.WaitFor(t, "n1 and n2 to route", 10*time.Second, func() bool { return n1.NumRoutes() > 0 && n2.NumRoutes() > 0 })
	n3 := start("n3", theirs, p3, p1, p2)
	// n3 keeps trying; give it the time of several attempts.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if n3.NumRoutes() > 0 {
			t.Fatal("a server whose certificate another CA signed joined the cluster")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestARolesFileBoundsANodesGPUs: a node user's gpus is its node's
// bound; gpus on another role, negative or past a heartbeat's 1,024 is
// refused naming the user and the field.
func TestARolesFileBoundsANodesGPUs(t *testing.T) {
	f, err := auth.Parse([]byte("users:\n- {name: box2, role: node, node: box2, gpus: 8, password: p}\n- {name: box3, role: node, node: box3, password: p}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.NodeGPUs(); len(got) != 1 || got["box2"] != 8 {
		t.Fatalf("NodeGPUs = %v, want box2: 8 only", got)
	}
	for _, bad := range []string{
		"users:\n- {name: obs, role: observer, gpus: 4, password: p}\n",
		"users:\n- {name: box2, role: node, node: box2, gpus: -1, password: p}\n",
		"users:\n- {name: box2, role: node, node: box2, gpus: 5000, password: p}\n",
	} {
		if _, err := auth.Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "gpus") {
			t.Errorf("%q: %v, want an error naming gpus", bad, err)
		}
	}
}
