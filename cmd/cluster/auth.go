package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

const authUsage = `usage:
  cluster auth init [--dir gpusched-auth] [--tenants a,b] [--nodes n1,n2] [--hosts h1,h2] [--force]
        write a roles file (users.yaml), a key per user, a self-signed TLS set and
        the NATS server configuration for an external nats-server
  cluster auth conf [--auth gpusched-auth] [--prefix gpusched]
        print the NATS server configuration of a roles file (after editing it)
`

func authCommand(args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(os.Stderr, authUsage)
		return errors.New("auth: say init or conf")
	}
	switch args[0] {
	case "init":
		return authInit(args[1:])
	case "conf":
		return authConf(args[1:])
	}
	fmt.Fprint(os.Stderr, authUsage)
	return fmt.Errorf("auth %s: unknown; use init or conf", args[0])
}

// names splits a comma-separated list of names, checking each.
func names(flagName, list string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !model.ValidToken(n) {
			return nil, fmt.Errorf("--%s %q: use letters, digits, - and _ only", flagName, n)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseAuthFlags parses an auth subcommand's flags: no arguments, and a
// --prefix that is one subject token.
func parseAuthFlags(fs *flag.FlagSet, args []string, prefix *string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if !model.ValidToken(*prefix) {
		return fmt.Errorf("--prefix %q: use letters, digits, - and _ only", *prefix)
	}
	return nil
}

func authInit(args []string) error {
	fs := newFlags("cluster auth init")
	dir := fs.String("dir", "gpusched-auth", "directory to write")
	tenants := fs.String("tenants", "default", "tenants, comma-separated: a submitter each (its key is TENANT.nk)")
	nodes := fs.String("nodes", "", "GPU nodes that join with 'cluster node --name N', comma-separated: a node user each")
	hosts := fs.String("hosts", strings.Join(auth.DefaultHosts(), ","), "names and addresses the server certificate is valid for")
	prefix := fs.String("prefix", events.DefaultPrefix, "subject prefix of the cluster")
	force := fs.Bool("force", false, "write a new set over an existing one (the old keys stop working)")
	if err := parseAuthFlags(fs, args, prefix); err != nil {
		return err
	}
	ts, err := names("tenants", *tenants)
	if err != nil {
		return err
	}
	ns, err := names("nodes", *nodes)
	if err != nil {
		return err
	}
	var hs []string
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return errors.New("--hosts: give at least one name or address for the server certificate")
	}
	out, err := auth.Init(auth.InitOptions{Dir: *dir, Prefix: *prefix, EventStream: durable.EventStream(*prefix),
		Tenants: ts, Nodes: ns, Hosts: hs, Force: *force, Now: time.Now()})
	if err != nil {
		return err
	}
	d := *dir
	fmt.Printf("wrote %s/:\n", d)
	fmt.Printf("  %-22s the roles file: who is who (docs/SECURITY.md)\n", auth.RolesFileName)
	for _, u := range out.Users {
		what := "role " + string(u.Role)
		switch {
		case u.Tenant != "":
			what += ", tenant " + u.Tenant
		case u.Node != "":
			what += ", node " + u.Node
		}
		fmt.Printf("  %-22s %s's key (%s): give it to that user only\n", filepath.Base(out.Seeds[u.Name]), u.Name, what)
	}
	fmt.Printf("  %-22s a self-signed CA, server and client certificates (for trying TLS out)\n", "tls/")
	fmt.Printf("  %-22s accounts, users and TLS for an external nats-server (include it)\n", filepath.Base(out.ServerConf))
	fmt.Printf("  %-22s the tls block of a nats-server's cluster block (routes)\n\n", filepath.Base(out.RouteConf))
	tlsServer := fmt.Sprintf("--tlscert %s --tlskey %s --tlsca %s", out.TLS.ServerCert, out.TLS.ServerKey, out.TLS.CA)
	tlsClient := fmt.Sprintf("--tlsca %s --tlscert %s --tlskey %s", out.TLS.CA, out.TLS.ClientCert, out.TLS.ClientKey)
	fmt.Printf("Run a cluster other machines can reach, authenticated, over TLS:\n  go run ./cmd/cluster --listen 0.0.0.0:4222 --auth %s %s\n", d, tlsServer)
	fmt.Printf("Connect as a role (HOST is the cluster's machine):\n")
	fmt.Printf("  go run ./cmd/observer --nats nats://HOST:4222 --nkey %s %s\n", filepath.Join(d, "observer.nk"), tlsClient)
	if len(ts) > 0 {
		fmt.Printf("  go run ./cmd/cluster submit --nats nats://HOST:4222 --nkey %s %s --name train --vram 20GB --duration 1h\n",
			filepath.Join(d, ts[0]+".nk"), tlsClient)
	}
	fmt.Printf("  nats --server nats://HOST:4222 --nkey %s %s req %s '{\"policy\":\"spread\"}'\n",
		filepath.Join(d, "admin.nk"), tlsClient, events.NewSubjects(*prefix).SchedStrategy())
	for _, n := range ns {
		fmt.Printf("  go run ./cmd/cluster node --name %s --gpus 8xA100-80GB --nats nats://HOST:4222 --nkey %s %s\n", n, filepath.Join(d, n+".nk"), tlsClient)
	}
	return nil
}

func authConf(args []string) error {
	fs := newFlags("cluster auth conf")
	path := fs.String("auth", "gpusched-auth", "roles file, or the directory 'cluster auth init' wrote")
	prefix := fs.String("prefix", events.DefaultPrefix, "subject prefix of the cluster")
	if err := parseAuthFlags(fs, args, prefix); err != nil {
		return err
	}
	f, err := auth.LoadDir(*path)
	if err != nil {
		return err
	}
	s := auth.ServerSettings{Prefix: *prefix, EventStream: durable.EventStream(*prefix)}
	if st, err := os.Stat(*path); err == nil && st.IsDir() {
		set := auth.NewTLSSet(filepath.Join(*path, "tls"))
		if _, err := os.Stat(set.ServerCert); err == nil {
			files := set.ServerFiles()
			s.TLS = &files
		}
	}
	fmt.Print(auth.ServerConfig(f, s))
	return nil
}
