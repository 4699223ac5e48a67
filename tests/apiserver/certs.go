package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// runCerts writes the harness's PKI into a directory: a CA, a serving
// certificate for loopback (and the -ip addresses) signed by it, the apiserver's client
// certificate towards kubelets, and a ServiceAccount token signing key pair. Done here
// rather than in Python so the tests need no crypto package.
func runCerts(args []string) int {
	fs := flag.NewFlagSet("certs", flag.ContinueOnError)
	dir := fs.String("dir", "", "output directory")
	var ips []net.IP
	fs.Func("ip", "an IP address the serving certificate also names (repeatable): the node's, the kubernetes Service's", func(s string) error {
		ip := net.ParseIP(s)
		if ip == nil {
			return fmt.Errorf("not an IP address: %q", s)
		}
		ips = append(ips, ip)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "certs: --dir is required")
		return 2
	}
	if err := writeCerts(*dir, ips); err != nil {
		fmt.Fprintf(os.Stderr, "certs: %v\n", err)
		return 1
	}
	return 0
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func writeCerts(dir string, extraIPs []net.IP) error {
	now := time.Now()
	caKey, err := newKey()
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "nfd-e2e-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	srvKey, err := newKey()
	if err != nil {
		return err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, extraIPs...),
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	// The apiserver's client certificate towards kubelets (node proxy, logs, exec): a
	// system:masters identity, as kubeadm's apiserver-kubelet-client.
	kcKey, err := newKey()
	if err != nil {
		return err
	}
	kcTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	kcDER, err := x509.CreateCertificate(rand.Reader, kcTmpl, caCert, &kcKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	saKey, err := newKey()
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	steps := []func() error{
		func() error { return writePEM(filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER) },
		func() error { return writeKey(filepath.Join(dir, "ca.key"), caKey) },
		func() error { return writePEM(filepath.Join(dir, "server.crt"), "CERTIFICATE", srvDER) },
		func() error { return writeKey(filepath.Join(dir, "server.key"), srvKey) },
		func() error { return writePEM(filepath.Join(dir, "kubelet-client.crt"), "CERTIFICATE", kcDER) },
		func() error { return writeKey(filepath.Join(dir, "kubelet-client.key"), kcKey) },
		func() error { return writeKey(filepath.Join(dir, "sa.key"), saKey) },
		func() error { return writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", saPub) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}
