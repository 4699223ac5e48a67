//go:build tools

// Package tools pins the test dependencies of upstream's e2e package (go test -c builds its
// _test.go files, whose imports `go mod tidy` would not see from here otherwise).
package tools

import (
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "k8s.io/kubernetes/test/e2e/framework"
	_ "k8s.io/kubernetes/test/e2e/framework/config"
	_ "sigs.k8s.io/node-feature-discovery/test/e2e"
	_ "sigs.k8s.io/node-feature-discovery/test/e2e/utils"
)
