package capi

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// inventoryList is clusterctl's inventory: its Provider objects, one per
// provider `clusterctl init` installed, with the version running.
var inventoryList = schema.GroupVersionKind{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Kind: "ProviderList"}

// Inventory is what clusterctl's inventory of the management cluster says
// runs: the core provider's (Cluster API's) version and the vsphere
// infrastructure provider's (CAPV's), "" for one it does not record. A
// cluster without the inventory (not installed by clusterctl) has neither,
// and no error.
func (p *Provider) Inventory(ctx context.Context) (clusterAPI, capv string, err error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(inventoryList)
	if err := p.c.List(ctx, list); err != nil {
		if apimeta.IsNoMatchError(err) {
			return "", "", nil
		}
		return "", "", fmt.Errorf("clusterctl inventory: %w", err)
	}
	for _, item := range list.Items {
		name, _, _ := unstructured.NestedString(item.Object, "providerName")
		kind, _, _ := unstructured.NestedString(item.Object, "type")
		version, _, _ := unstructured.NestedString(item.Object, "version")
		switch {
		case kind == "CoreProvider" && name == "cluster-api":
			clusterAPI = version
		case kind == "InfrastructureProvider" && name == "vsphere":
			capv = version
		}
	}
	return clusterAPI, capv, nil
}
