package capi

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// APIProbe asks an API server for one Node, in one request: it is a
// reading of whether the server answers now, as a load balancer's health
// check is. client-go retries a GET that met a reset or closed connection
// up to ten times, a second apart, so through a load balancer whose API
// servers are going away one reading could last its whole timeout (seen
// in CI: kind-remove-apiserver-pods' served-by-third got two readings in
// its 20 s budget); the probe's poll interval does the retrying instead.
type APIProbe struct {
	rest rest.Interface
}

// NewAPIProbe returns an APIProbe through cfg.
func NewAPIProbe(cfg *rest.Config) (*APIProbe, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("API probe for %s: %w", cfg.Host, err)
	}
	return &APIProbe{rest: cs.CoreV1().RESTClient()}, nil
}

// Read lists at most one Node (a read from etcd, so it fails when etcd has
// no quorum), with no client-side retry.
func (a *APIProbe) Read(ctx context.Context) error {
	return a.rest.Get().Resource("nodes").Param("limit", "1").MaxRetries(0).Do(ctx).Error()
}
