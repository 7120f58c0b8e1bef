package capi_test

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
)

// TestReadOnly: a read-only provider reads, and refuses every write, through
// its own methods and through its client.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	if err := errors.Join(clusterv1.AddToScheme(s), controlplanev1.AddToScheme(s)); err != nil {
		t.Fatal(err)
	}
	m := machine("m1", cp, "Running")
	p := capi.New(fake.NewClientBuilder().WithScheme(s).WithRuntimeObjects(m).Build(), capi.WithReadOnly())
	if objs, err := p.Resolve(ctx, providers.Selector{Role: "control-plane"}); err != nil || names(objs) != "m1" {
		t.Fatalf("resolve: %v %v", names(objs), err)
	}
	scope := providers.Object{}
	obj := map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": map[string]any{"name": "m2", "namespace": "ns"}}
	c := p.Client()
	for name, write := range map[string]func() error{
		"apply object": func() error { return p.ApplyObject(ctx, scope, "management", obj) },
		"delete object": func() error {
			return p.DeleteObject(ctx, scope, providers.ObjectRef{Cluster: "management", APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Machine", Namespace: "ns", Name: "m1"})
		},
		"dry run":     func() error { return p.DryRunCreate(ctx, scope, "management", obj) },
		"create":      func() error { return c.Create(ctx, machine("m3", nil, "")) },
		"update":      func() error { return c.Update(ctx, m) },
		"patch":       func() error { return c.Patch(ctx, m, client.MergeFrom(m)) },
		"delete":      func() error { return c.Delete(ctx, m) },
		"delete all":  func() error { return c.DeleteAllOf(ctx, &clusterv1.Machine{}, client.InNamespace("ns")) },
		"status":      func() error { return c.Status().Update(ctx, m) },
		"subresource": func() error { return c.SubResource("scale").Patch(ctx, m, client.MergeFrom(m)) },
	} {
		if err := write(); !errors.Is(err, capi.ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", name, err)
		}
	}
	var left clusterv1.MachineList
	if err := c.List(ctx, &left); err != nil || len(left.Items) != 1 {
		t.Errorf("machines after the refused writes: %d (%v), want 1", len(left.Items), err)
	}
}
