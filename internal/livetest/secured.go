package livetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/bus"
	"github.com/gpusched/gpusched/cluster"
)

// Secured is a cluster whose embedded server enforces a roles file over
// mutual TLS, with the files each user connects with.
type Secured struct {
	Cluster *cluster.Cluster
	URL     string
	TLS     auth.TLSSet
	// Seeds are the users' nkey seed files by name; Dir holds them.
	Seeds map[string]string
	Dir   string
}

// SecuredUsers are the users of SecureCluster: name → role, tenant, node.
var SecuredUsers = []auth.User{
	{Name: "admin", Role: auth.Admin}, {Name: "observer", Role: auth.Observer},
	{Name: "alice", Role: auth.Submitter, Tenant: "team-a"}, {Name: "bob", Role: auth.Submitter, Tenant: "team-b"},
	{Name: "node-0", Role: auth.Node, Node: "node-0"}, {Name: "far-node", Role: auth.Node, Node: "far-node"},
}

// SecurePassword is the password of "carol", an observer who signs in
// with a password.
const SecurePassword = "right-password"

// SecureCluster starts cfg's cluster (the reference one by default) on a random port with SecuredUsers (nkeys), carol (an observer
// with a bcrypt password) and mutual TLS from a self-signed set; all
// stop when the test ends.
func SecureCluster(t testing.TB, cfg cluster.Config) *Secured {
	t.Helper()
	dir := t.TempDir()
	s := &Secured{Dir: dir, Seeds: map[string]string{}, TLS: auth.NewTLSSet(dir)}
	f := &auth.File{}
	for _, u := range SecuredUsers {
		user, seed, err := auth.NewUser(u.Name, u.Role, u.Tenant, u.Node)
		if err != nil {
			t.Fatal(err)
		}
		f.Users = append(f.Users, user)
		s.Seeds[u.Name] = filepath.Join(dir, u.Name+".nk")
		if err := os.WriteFile(s.Seeds[u.Name], seed, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(SecurePassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	f.Users = append(f.Users, auth.User{Name: "carol", Role: auth.Observer, Password: string(hash)})
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
	if err := auth.WriteSelfSigned(s.TLS, []string{"127.0.0.1", "localhost"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	cfg.Listen, cfg.Auth = "127.0.0.1:-1", f
	cfg.TLS = &auth.TLSFiles{Cert: s.TLS.ServerCert, Key: s.TLS.ServerKey, CA: s.TLS.CA}
	if cfg.Speed == 0 {
		cfg.Speed = 1
	}
	c, err := cluster.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(c.Stop)
	s.Cluster, s.URL = c, c.URL()
	return s
}

// Options are the bus options of user: its nkey and the cluster's client
// certificate.
func (s *Secured) Options(user string) bus.Options {
	return bus.Options{URLs: s.URL, NKey: s.Seeds[user], TLSCA: s.TLS.CA, TLSCert: s.TLS.ClientCert, TLSKey: s.TLS.ClientKey}
}

// As connects as user (closed when the test ends).
func (s *Secured) As(t testing.TB, user string, extra ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := s.Options(user).Connect("test-"+user, 10*time.Second, extra...)
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc
}
