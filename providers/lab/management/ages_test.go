package management

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// TestRestamp: after restamp, what the API server serves of every object
// stored before (a namespace of its own, stored as protobuf; a custom
// resource, stored as JSON; ConfigMaps more than etcd takes in one
// request) was created at the time given, as kubectl's
// AGE reads it (a real kube-apiserver and etcd).
func TestRestamp(t *testing.T) {
	env := apiServer(t)
	cfg := env.Config
	ctx := context.Background()
	m := &Plane{cfg: cfg, stack: labconfig.DefaultStack()}
	if err := m.writeInventory(ctx); err != nil {
		t.Fatal(err)
	}
	s := clusterctlScheme(t)
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	// Objects as big as the largest CRDs, more of them than etcd takes
	// in one request.
	big := []client.Object{}
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: fmt.Sprintf("big-%d", i)},
			Data: map[string]string{"data": strings.Repeat("x", 700<<10)}}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		big = append(big, cm)
	}
	now := time.Now().Add(time.Hour).Truncate(time.Second)
	n, err := restamp(ctx, env.ControlPlane.Etcd.URL.String(), now)
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Errorf("restamped %d objects; want the namespaces, the CRD and the inventory's Providers at least", n)
	}
	for _, obj := range append(big,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "capi-system"}},
		&clusterctlv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"}},
	) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		if got := obj.GetCreationTimestamp().Time; !got.Equal(now) {
			t.Errorf("%T %s created at %s; want %s", obj, obj.GetName(), got, now)
		}
	}
}
