// Package versioned declares the part of NFD's generated clientset gpu-feature-discovery calls
// (see ../../../../go.mod); NewForConfig refuses, as nothing in the tests asks for the API.
package versioned

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	api "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"
)

type NodeFeatureInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*api.NodeFeature, error)
	Create(ctx context.Context, nf *api.NodeFeature, opts metav1.CreateOptions) (*api.NodeFeature, error)
	Update(ctx context.Context, nf *api.NodeFeature, opts metav1.UpdateOptions) (*api.NodeFeature, error)
}

type NfdV1alpha1Interface interface {
	NodeFeatures(namespace string) NodeFeatureInterface
}

type Interface interface {
	NfdV1alpha1() NfdV1alpha1Interface
}

func NewForConfig(*rest.Config) (Interface, error) {
	return nil, errors.New("the NodeFeature API is not available in this test build of gpu-feature-discovery")
}
