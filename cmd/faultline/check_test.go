package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"github.com/faultline-dev/faultline/session"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/lab/labtest"
)

// TestCheckBadInput: bad flags and an unreachable cluster end with exit
// 2 and 3 and say why, within the deadline.
func TestCheckBadInput(t *testing.T) {
	dir := t.TempDir()
	unreachable := unreachableKubeconfig(t, "mgmt")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check", "--output", "xml"}, 2, `--output "xml": expected text, json, yaml or junit`},
		{[]string{"check", "--kubeconfig", filepath.Join(dir, "missing")}, 2, "--kubeconfig " + filepath.Join(dir, "missing")},
		{[]string{"check", "--kubeconfig", unreachable, "--context", "other"}, 2, `kubeconfig context "other" not found; it has: mgmt`},
		{[]string{"check", "--kubeconfig", unreachable, "--timeout", "3s"}, 3, "check context mgmt: list Clusters:"},
		{[]string{"check", "--kubeconfig", unreachable, "--vcenter-url", "ftp://vc.example.com"}, 2, `vCenter URL scheme "ftp": expected https`},
		{[]string{"check", "--kind-cluster", "c", "--workload-kubeconfig", unreachable}, 2, "--kind-cluster names the cluster to check: leave out --kubeconfig"},
	} {
		var out, errOut bytes.Buffer
		code := execute(tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut.String(), tc.code, tc.want)
		}
	}
	// -o junit against an unreachable cluster: a valid JUnit with the
	// error as a case, not an empty file.
	var out, errOut bytes.Buffer
	if code := execute([]string{"check", "--kubeconfig", unreachable, "--timeout", "3s", "-o", "junit"}, &out, &errOut); code != 3 {
		t.Fatalf("check -o junit, unreachable: exit %d: %s", code, errOut.String())
	}
	var doc artifacts.JUnitSuites
	if err := xml.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("check -o junit, unreachable: %v\n%s", err, out.String())
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Errors != 1 || !strings.Contains(doc.Suites[0].Cases[0].Error.Message, "list Clusters") {
		t.Errorf("check -o junit, unreachable:\n%s", out.String())
	}
}

// TestCheckNamedTarget: a check pointed somewhere checks that or fails; it
// never starts the embedded lab instead ($KUBECONFIG names a cluster as
// --kubeconfig does, and a vCenter alone names no management cluster).
func TestCheckNamedTarget(t *testing.T) {
	unreachable := unreachableKubeconfig(t, "prod")
	for _, tc := range []struct {
		name       string
		kubeconfig string
		args       []string
		code       int
		want       string
	}{
		{"KUBECONFIG", unreachable, []string{"check", "--timeout", "3s"}, 3, "check context prod: list Clusters:"},
		{"vcenter-url alone", "", []string{"check", "--vcenter-url", "https://vc.example.com/sdk", "--vcenter-username", "sre"}, 2, "--vcenter-url names vCenter https://vc.example.com/sdk, but no management cluster is named"},
		{"GOVC_URL alone", "", []string{"check"}, 2, "$GOVC_URL names vCenter https://vc.example.com/sdk, but no management cluster is named"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfig)
			t.Setenv("GOVC_URL", "")
			t.Setenv("GOVC_USERNAME", "sre")
			if tc.name == "GOVC_URL alone" {
				t.Setenv("GOVC_URL", "https://vc.example.com/sdk")
			}
			var out, errOut bytes.Buffer
			code := execute(tc.args, &out, &errOut)
			if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut.String(), tc.code, tc.want)
			}
			if strings.Contains(errOut.String(), "lab:") {
				t.Errorf("started the embedded lab instead of the cluster named:\n%s", errOut.String())
			}
			if tc.kubeconfig != "" && !strings.HasPrefix(errOut.String(), "capi: context prod (https://127.0.0.1:1, "+unreachable+")") {
				t.Errorf("first line does not name the target:\n%s", errOut.String())
			}
		})
	}
}

// TestIntegrationCheckLab: faultline check with no target starts the lab
// and finds nothing above info on it.
func TestIntegrationCheckLab(t *testing.T) {
	labtest.Require(t)
	var out, errOut bytes.Buffer
	code := execute([]string{"check", "--output", "json"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
	var doc struct {
		Clusters []session.CheckedCluster `json:"clusters"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, out.String())
	}
	if len(doc.Clusters) != 1 || doc.Clusters[0].Cluster != "default/lab" || doc.Clusters[0].Skipped != "" {
		t.Fatalf("clusters %+v, want default/lab checked", doc.Clusters)
	}
	for _, f := range doc.Clusters[0].Findings {
		if f.Severity != "info" {
			t.Errorf("a fresh lab: %s finding %s: %s", f.Severity, f.ID, f.Message)
		}
	}
}

// TestIntegrationCheckReadOnlyRBAC: faultline check passes under a
// ServiceAccount that may only get, list and watch, which cannot write.
func TestIntegrationCheckReadOnlyRBAC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, paths := startTestLab(t, ctx)
	admin, err := clientcmd.BuildConfigFromFlags("", paths[0])
	if err != nil {
		t.Fatal(err)
	}
	c := l.Client()
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "checker"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "read-only"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "checker-read-only"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "read-only"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "checker"}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "checker", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ro := rest.AnonymousClientConfig(admin)
	ro.BearerToken = tok.Status.Token
	roClient, err := client.New(ro, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := roClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}}); !apierrors.IsForbidden(err) {
		t.Fatalf("the read-only ServiceAccount wrote: %v, want Forbidden", err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["lab"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	kc.AuthInfos["checker"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["checker"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "checker"}
	kc.CurrentContext = "checker"
	path := filepath.Join(t.TempDir(), "checker.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := execute([]string{"check", "--kubeconfig", path, "-o", "text"}, &out, &errOut)
	t.Logf("stdout:\n%s", out.String())
	if code != 0 || !strings.Contains(out.String(), "cluster default/lab:") {
		t.Fatalf("exit %d\nstderr: %s", code, errOut.String())
	}

	// A vCenter other than the one the cluster's VSphereCluster and
	// VSphereVMs name: refused before anything is read there (it has none
	// of their VMs, each would be called missing); the cluster's own one
	// is read.
	other, err := lab.StartVCSim(lab.VCSimInput{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	password := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(password, []byte(other.Config().Password), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sim  *lab.VCSim
		code int
		want string
	}{
		{other, 2, "vCenter " + other.URL().Host + " is not the cluster's: its objects name " + l.Sim().URL().Host + " (VSphereCluster default/lab, VSphereVM default/"},
		{l.Sim(), 0, ""},
	} {
		out.Reset()
		errOut.Reset()
		code := execute([]string{"check", "--kubeconfig", path, "--vcenter-url", tc.sim.URL().String(), "--vcenter-ca-file", tc.sim.CAFile(),
			"--vcenter-username", tc.sim.Config().Username, "--vcenter-password-file", password}, &out, &errOut)
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) || strings.Contains(out.String(), "vcenter-vm-missing") {
			t.Errorf("check against vCenter %s: exit %d, want %d and %q\nstdout: %s\nstderr: %s", tc.sim.URL().Host, code, tc.code, tc.want, out.String(), errOut.String())
		}
	}

	// A pair of kubeconfigs given by hand, and the workload cluster alone
	// (as a kind cluster would be checked).
	for _, tc := range []struct {
		args    []string
		code    int
		cluster string
	}{
		{[]string{"--kubeconfig", path, "--workload-kubeconfig", paths[1], "--cluster", "default/lab"}, 0, "default/lab"},
		{[]string{"--workload-kubeconfig", paths[1]}, 0, "context "},
		{[]string{"--kubeconfig", path, "--cluster", "default/nope"}, 2, ""},
		{[]string{"--workload-kubeconfig", paths[1], "--workload-context", "nope"}, 2, ""},
	} {
		out.Reset()
		errOut.Reset()
		code := execute(append([]string{"check", "-o", "json"}, tc.args...), &out, &errOut)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d\nstderr: %s", tc.args, code, tc.code, errOut.String())
			continue
		}
		if tc.code != 0 {
			t.Logf("%v: %s", tc.args, errOut.String())
			continue
		}
		var doc struct {
			Clusters []session.CheckedCluster `json:"clusters"`
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Clusters) != 1 || !strings.HasPrefix(doc.Clusters[0].Cluster, tc.cluster) {
			t.Errorf("%v: %v %s", tc.args, err, out.String())
			continue
		}
		for _, f := range doc.Clusters[0].Findings {
			if f.Severity != "info" {
				t.Errorf("%v: %s %s: %s", tc.args, f.Severity, f.ID, f.Message)
			}
		}
	}
}

// startTestLab starts a lab of one control plane and one worker for the
// test, and writes its kubeconfigs (the management cluster's first).
func startTestLab(t *testing.T, ctx context.Context) (*lab.Lab, []string) {
	t.Helper()
	l := labtest.Start(t, lab.ClusterSpec{Name: "lab", LabSpec: scenario.LabSpec{ControlPlanes: 1, Workers: 1}})
	paths, err := l.WriteKubeconfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return l, paths
}

// unreachableKubeconfig writes a kubeconfig whose one context, named
// context, reaches port 1 on loopback: nothing listens there, the
// connection is refused.
func unreachableKubeconfig(t *testing.T, context string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: `+context+`, context: {cluster: c, user: u}}]
current-context: `+context+`
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
