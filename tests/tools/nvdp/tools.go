//go:build tools

// Package tools pins the command built from the module (a main package is imported by nothing
// here, so `go mod tidy` would drop its dependencies otherwise).
package tools

import (
	_ "github.com/NVIDIA/k8s-device-plugin/cmd/nvidia-device-plugin"
)
