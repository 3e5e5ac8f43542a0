package auth

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nkeys"
)

// InitOptions say what Init writes.
type InitOptions struct {
	// Dir is the directory written (created; it must not hold a roles
	// file unless Force).
	Dir string
	// Prefix is the cluster's subject prefix (for nats-auth.conf).
	Prefix string
	// EventStream is the name of the cluster's event stream.
	EventStream string
	// Tenants get a submitter each; Nodes a node user each (for `cluster
	// node --name N` processes).
	Tenants, Nodes []string
	// Hosts are the names and addresses the server certificate is valid
	// for.
	Hosts []string
	// Force overwrites what a previous Init wrote.
	Force bool
	// Now dates the certificates.
	Now time.Time
}

// Initialized is what Init wrote.
type Initialized struct {
	// RolesFile is the roles file, Seeds each user's seed file by name,
	// TLS the self-signed set, ServerConf the accounts and TLS for an
	// external nats-server, RouteConf the tls block of its cluster block.
	RolesFile  string
	Seeds      map[string]string
	TLS        TLSSet
	ServerConf string
	RouteConf  string
	Users      []User
}

// RolesFileName is the roles file's name in an Init directory.
const RolesFileName = "users.yaml"

// NewUser makes a user of role with a fresh nkey, returning its seed.
func NewUser(name string, role Role, tenant, node string) (User, []byte, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return User{}, nil, err
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	return User{Name: name, Role: role, Tenant: tenant, Node: node, NKey: pub}, seed, nil
}

// Init writes a roles file with an admin, an observer, a control-plane
// user (for a control plane on an external server), a submitter per
// tenant and a node user per node, each with a fresh nkey whose seed is a
// file of its own (mode 0600), a self-signed TLS set under tls/, and the
// NATS server configuration for an external server.
func Init(o InitOptions) (*Initialized, error) {
	rolesFile := filepath.Join(o.Dir, RolesFileName)
	if _, err := os.Stat(rolesFile); err == nil && !o.Force {
		return nil, fmt.Errorf("%s exists: keep it, or write a new set over it with --force (the old keys stop working)", rolesFile)
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "tls"), 0o700); err != nil {
		return nil, err
	}
	wants := []User{{Name: "admin", Role: Admin}, {Name: "observer", Role: Observer}, {Name: "control", Role: Control}}
	for _, t := range o.Tenants {
		wants = append(wants, User{Name: t, Role: Submitter, Tenant: t})
	}
	for _, n := range o.Nodes {
		wants = append(wants, User{Name: n, Role: Node, Node: n})
	}
	out := &Initialized{RolesFile: rolesFile, Seeds: map[string]string{}, TLS: NewTLSSet(filepath.Join(o.Dir, "tls")),
		ServerConf: filepath.Join(o.Dir, "nats-auth.conf"), RouteConf: filepath.Join(o.Dir, "nats-route-tls.conf")}
	f := &File{}
	seeds := map[string][]byte{}
	for _, w := range wants {
		u, seed, err := NewUser(w.Name, w.Role, w.Tenant, w.Node)
		if err != nil {
			return nil, err
		}
		f.Users = append(f.Users, u)
		seeds[w.Name] = seed
	}
	if err := f.Check(); err != nil {
		return nil, err
	}
	for _, u := range f.Users {
		path := filepath.Join(o.Dir, u.Name+".nk")
		if err := writeFile(path, append(seeds[u.Name], '\n'), 0o600); err != nil {
			return nil, err
		}
		out.Seeds[u.Name] = path
	}
	data, err := f.Marshal()
	if err != nil {
		return nil, err
	}
	// The roles file holds public keys only, but who may do what is no
	// one else's business: the owner's alone, like the rest.
	if err := writeFile(rolesFile, data, 0o600); err != nil {
		return nil, err
	}
	hosts := o.Hosts
	if len(hosts) == 0 {
		hosts = DefaultHosts()
	}
	if err := WriteSelfSigned(out.TLS, hosts, o.Now); err != nil {
		return nil, err
	}
	tlsFiles := out.TLS.ServerFiles()
	conf := ServerConfig(f, ServerSettings{Prefix: o.Prefix, EventStream: o.EventStream, TLS: &tlsFiles})
	if err := writeFile(out.ServerConf, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	if err := writeFile(out.RouteConf, []byte(RouteTLSConfig(tlsFiles)), 0o644); err != nil {
		return nil, err
	}
	out.Users = f.Users
	return out, nil
}

// DefaultHosts are the names a generated server certificate is valid for
// when none are given: loopback and this machine's host name.
func DefaultHosts() []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil && h != "" && !slices.Contains(hosts, h) {
		hosts = append(hosts, h)
	}
	return hosts
}

// LoadDir loads the roles file at path, or in it when path is a directory
// (as `cluster auth init` writes one).
func LoadDir(path string) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("--auth %s: %v (create one with `cluster auth init`)", path, errors.Unwrap(err))
	}
	if st.IsDir() {
		path = filepath.Join(path, RolesFileName)
	}
	f, err := Load(path)
	if err != nil {
		return nil, fmt.Errorf("--auth %s: %v", path, err)
	}
	return f, nil
}

// writeFile writes data to path with mode, also when the file exists
// (os.WriteFile keeps an existing file's mode: a seed once 0644 would
// stay readable to all after `auth init --force`).
func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.WriteFile(path, data, mode); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}
