//go:build tools

// Package tools pins the commands built from upstream's module (main packages are not imported
// by anything here, so `go mod tidy` would drop their dependencies otherwise).
package tools

import (
	_ "sigs.k8s.io/node-feature-discovery/cmd/kubectl-nfd"
	_ "sigs.k8s.io/node-feature-discovery/cmd/nfd-gc"
	_ "sigs.k8s.io/node-feature-discovery/cmd/nfd-master"
	_ "sigs.k8s.io/node-feature-discovery/cmd/nfd-topology-updater"
	_ "sigs.k8s.io/node-feature-discovery/cmd/nfd-worker"
)
