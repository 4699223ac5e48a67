// Package v1alpha1 aliases the NodeFeature types gpu-feature-discovery names (see ../../../../go.mod).
package v1alpha1

import api "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

type (
	NodeFeature     = api.NodeFeature
	NodeFeatureSpec = api.NodeFeatureSpec
)

const NodeFeatureObjNodeNameLabel = api.NodeFeatureObjNodeNameLabel

var NewFeatures = api.NewFeatures
