package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TLSSet names the files of a self-signed TLS set under a directory.
type TLSSet struct {
	CA, CAKey, ServerCert, ServerKey, ClientCert, ClientKey string
}

// NewTLSSet names the files of the set in dir.
func NewTLSSet(dir string) TLSSet {
	return TLSSet{CA: filepath.Join(dir, "ca.pem"), CAKey: filepath.Join(dir, "ca-key.pem"),
		ServerCert: filepath.Join(dir, "server-cert.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client-cert.pem"), ClientKey: filepath.Join(dir, "client-key.pem")}
}

// ServerFiles are the set's server certificate, key and CA as absolute
// paths (a server configuration is read from elsewhere than it was
// written).
func (set TLSSet) ServerFiles() TLSFiles {
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	return TLSFiles{Cert: abs(set.ServerCert), Key: abs(set.ServerKey), CA: abs(set.CA)}
}

// tlsValidity is how long a generated certificate is valid: a set for
// trying things out, not for production (docs/SECURITY.md).
const tlsValidity = 365 * 24 * time.Hour

// WriteSelfSigned writes a CA, a server certificate for hosts (names and
// IP addresses; the NATS servers' routes use it too) and a client
// certificate, all signed by the CA, as PEM files named by set.
func WriteSelfSigned(set TLSSet, hosts []string, now time.Time) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{Organization: []string{"gpusched"}, CommonName: "gpusched self-signed CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(tlsValidity), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writePEM(set.CA, "CERTIFICATE", caDER, 0o644); err != nil {
		return err
	}
	if err := writeKey(set.CAKey, caKey); err != nil {
		return err
	}
	leaf := func(cert, key, cn string, usage x509.ExtKeyUsage, hosts []string) error {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(), Subject: pkix.Name{Organization: []string{"gpusched"}, CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(tlsValidity),
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		if usage == x509.ExtKeyUsageServerAuth {
			// Routes between NATS servers are TLS clients of each other.
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			return err
		}
		if err := writePEM(cert, "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
		return writeKey(key, k)
	}
	if err := leaf(set.ServerCert, set.ServerKey, hostsCN(hosts), x509.ExtKeyUsageServerAuth, hosts); err != nil {
		return err
	}
	return leaf(set.ClientCert, set.ClientKey, "gpusched client", x509.ExtKeyUsageClientAuth, nil)
}

func hostsCN(hosts []string) string {
	if len(hosts) == 0 {
		return "gpusched server"
	}
	return hosts[0]
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func writeKey(path string, k *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	if err := writeFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
