// Command testapiserver is the e2e harness's Kubernetes control plane in one
// binary, so only one large link is needed:
//
//	testapiserver etcd --data-dir DIR --client-port N --peer-port M
//	testapiserver kube-apiserver [kube-apiserver flags...]
//	testapiserver certs --dir DIR
//
// Both run as separate OS processes so the apiserver can be stopped and
// restarted against the same etcd data (outage tests).
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
	_ "time/tzdata"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/component-base/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testapiserver etcd|kube-apiserver|certs [flags]")
		os.Exit(2)
	}
	sub := os.Args[1]
	os.Args = append([]string{os.Args[0]}, os.Args[2:]...)
	switch sub {
	case "etcd":
		os.Exit(runEtcd(os.Args[1:]))
	case "kube-apiserver":
		os.Exit(cli.Run(app.NewAPIServerCommand()))
	case "certs":
		os.Exit(runCerts(os.Args[1:]))
	case "version":
		fmt.Println(version.Get().GitVersion)
	default:
		fmt.Fprintf(os.Stderr, "unknown subcommand %q\n", sub)
		os.Exit(2)
	}
}

func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "etcd data directory")
	clientPort := fs.Int("client-port", 0, "loopback client port")
	peerPort := fs.Int("peer-port", 0, "loopback peer port")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dataDir == "" || *clientPort == 0 || *peerPort == 0 {
		fmt.Fprintln(os.Stderr, "etcd: --data-dir, --client-port and --peer-port are required")
		return 2
	}
	cfg := embed.NewConfig()
	cfg.Name = "nfd-test"
	cfg.Dir = *dataDir
	cfg.LogLevel = "warn"
	// Test data is disposable: skip fsync so starting and writing stays fast.
	cfg.UnsafeNoFsync = true
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", *clientPort)}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", *peerPort)}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: start: %v\n", err)
		return 1
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(os.Stderr, "etcd ready on %s\n", client.String())
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "etcd: not ready after 60s")
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "etcd: %v, stopping\n", s)
		return 0
	case err := <-e.Err():
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		return 1
	}
}
