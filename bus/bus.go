package bus

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Options say how to reach the bus.
type Options struct {
	// URLs is a comma-separated list of NATS server URLs (the servers of a
	// NATS cluster; the client fails over between them).
	URLs string
	// Creds is a credentials file (JWT and nkey seed); NKey an nkey seed
	// file; User and Password a user's login; Token a bearer token.
	Creds, NKey, User, Password, Token string
	// TLSCert and TLSKey are a client certificate and its key; TLSCA the
	// CA that signed the server's certificate.
	TLSCert, TLSKey, TLSCA string
}

// AddFlags registers the options as flags on fs, named like the nats
// CLI's: --nats, --creds, --nkey, --user, --password, --token, --tlscert,
// --tlskey, --tlsca. url is --nats's default.
func (o *Options) AddFlags(fs *flag.FlagSet, url, usage string) {
	fs.StringVar(&o.URLs, "nats", url, usage)
	fs.StringVar(&o.Creds, "creds", "", "NATS credentials file (JWT and nkey seed)")
	fs.StringVar(&o.NKey, "nkey", "", "NATS nkey seed file")
	fs.StringVar(&o.User, "user", "", "NATS user")
	fs.StringVar(&o.Password, "password", "", "NATS password")
	fs.StringVar(&o.Token, "token", "", "NATS token")
	fs.StringVar(&o.TLSCert, "tlscert", "", "TLS client certificate file")
	fs.StringVar(&o.TLSKey, "tlskey", "", "TLS client key file")
	fs.StringVar(&o.TLSCA, "tlsca", "", "CA file that signed the NATS server's certificate")
}

// Check says what is wrong with the options, naming the flag.
func (o Options) Check() error {
	if strings.TrimSpace(o.URLs) == "" {
		return errors.New("--nats: give the NATS URL, e.g. nats://127.0.0.1:4222 (several: comma-separated)")
	}
	for _, u := range strings.Split(o.URLs, ",") {
		u = strings.TrimSpace(u)
		if !strings.Contains(u, "://") && strings.Contains(u, "/") {
			return fmt.Errorf("--nats %q: want nats://HOST:PORT", u)
		}
	}
	for flagName, path := range map[string]string{"creds": o.Creds, "nkey": o.NKey, "tlscert": o.TLSCert, "tlskey": o.TLSKey, "tlsca": o.TLSCA} {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("--%s %q: %v", flagName, path, errors.Unwrap(err))
		}
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return errors.New("--tlscert and --tlskey go together")
	}
	if o.Password != "" && o.User == "" {
		return errors.New("--password needs --user")
	}
	return nil
}

// NATSOptions are the nats.Connect options for o (besides the name); a
// process on the bus reconnects for ever.
func (o Options) NATSOptions() ([]nats.Option, error) {
	opts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond), nats.RetryOnFailedConnect(true)}
	if o.Creds != "" {
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.NKey != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKey)
		if err != nil {
			return nil, fmt.Errorf("--nkey %s: %v", o.NKey, err)
		}
		opts = append(opts, opt)
	}
	if o.User != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.TLSCert != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	return opts, nil
}

// Connect connects to the bus as name, waiting up to timeout for a first
// server to answer (it keeps reconnecting after that).
func (o Options) Connect(name string, timeout time.Duration, extra ...nats.Option) (*nats.Conn, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	opts, err := o.NATSOptions()
	if err != nil {
		return nil, err
	}
	connected := make(chan struct{}, 1)
	opts = append(opts, nats.Name(name), nats.ConnectHandler(func(*nats.Conn) {
		select {
		case connected <- struct{}{}:
		default:
		}
	}))
	opts = append(opts, extra...)
	nc, err := nats.Connect(o.URLs, opts...)
	if err != nil {
		return nil, fmt.Errorf("NATS at %s: %v", o.URLs, err)
	}
	if nc.IsConnected() {
		return nc, nil
	}
	select {
	case <-connected:
		return nc, nil
	case <-time.After(timeout):
		nc.Close()
		return nil, fmt.Errorf("NATS at %s: no server answered within %s", o.URLs, timeout)
	}
}
