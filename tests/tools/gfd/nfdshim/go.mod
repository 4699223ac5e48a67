// A stand-in for sigs.k8s.io/node-feature-discovery v0.15.7, which k8s-device-plugin v0.17.4
// requires but the Go module proxy this project uses does not serve. gpu-feature-discovery uses
// two of its packages only for --use-node-feature-api (a NodeFeature object instead of a
// features.d file); the tests run it with --output-file, so the API types are v0.17.3's
// (aliased) and the client is an interface that no code path here constructs.
module sigs.k8s.io/node-feature-discovery

go 1.23.0

require (
	k8s.io/apimachinery v0.32.0
	k8s.io/client-go v0.32.0
	sigs.k8s.io/node-feature-discovery/api/nfd v0.17.3
)
