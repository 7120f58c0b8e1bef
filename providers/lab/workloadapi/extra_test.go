package workloadapi

import "testing"

func TestParseExtra(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path, resource, namespace, name string
		ok                              bool
	}{
		{"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", "validatingwebhookconfigurations", "", "", true},
		{"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/x", "mutatingwebhookconfigurations", "", "x", true},
		{"/api/v1/namespaces/kube-system/events", "events", "kube-system", "", true},
		{"/api/v1/namespaces/kube-system/events/e1", "events", "kube-system", "e1", true},
		{"/api/v1/events", "events", "", "", true},
		// Cluster-scoped kinds are not served under a namespace; the
		// in-memory server's own kinds pass through.
		{"/apis/admissionregistration.k8s.io/v1/namespaces/x/validatingwebhookconfigurations", "", "", "", false},
		{"/api/v1/namespaces/kube-system", "", "", "", false},
		{"/api/v1/nodes", "", "", "", false},
		{"/apis/apps/v1/namespaces/kube-system/daemonsets", "", "", "", false},
		{"/api/v1/namespaces/kube-system/pods/p/portforward", "", "", "", false},
	}
	for _, tc := range tests {
		req, ok := parseExtra(tc.path)
		if ok != tc.ok || req.res.resource != tc.resource || req.namespace != tc.namespace || req.name != tc.name {
			t.Errorf("%s: got %+v %t", tc.path, req, ok)
		}
	}
}

func TestParseCollection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{"/api/v1/namespaces/metallb-system/configmaps", "/v1, Resource=configmaps metallb-system", true},
		{"/apis/crd.projectcalico.org/v1/ippools", "crd.projectcalico.org/v1, Resource=ippools ", true},
		{"/api/v1/namespaces/x/configmaps/name", "", false},
		{"/healthz", "", false},
	} {
		gvr, ns, ok := parseCollection(tc.path)
		if got := gvr.String() + " " + ns; ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: %q %t, want %q %t", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}
