// Command kube-scheduler is the real Kubernetes scheduler, built from the same
// k8s.io/kubernetes version as the e2e control plane (tests/apiserver), for the
// install-journey test: pods are bound by the scheduler, not by the test.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
