// Command kube-scheduler-nrt is the kube-scheduler with kubernetes-sigs/scheduler-plugins'
// NodeResourceTopologyMatch registered (the plugin that reads NodeResourceTopology objects):
// the topology-aware consumer of nfd-topology-updater's objects in the e2e tests
// (tests/e2e/test_topology_scheduler.py). Built from the published scheduler-plugins module,
// cached outside the repository (tests/e2e/tools.py); nothing of upstream is committed.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"sigs.k8s.io/scheduler-plugins/pkg/noderesourcetopology"

	// The plugin's args types (NodeResourceTopologyMatchArgs) in the config scheme.
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme"
)

func main() {
	command := app.NewSchedulerCommand(
		app.WithPlugin(noderesourcetopology.Name, noderesourcetopology.New),
	)
	os.Exit(cli.Run(command))
}
