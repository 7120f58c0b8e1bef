package kind_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/kind/kindtest"
)

// testNightlyCronJob builds faultline's image (hack/image.sh), loads it
// into every node as `kind load` does, applies deploy/base with that tag
// (kubectl's kustomize, on a control plane), and runs the CronJob as a
// Job twice: on the healthy cluster it succeeds and its report ConfigMap
// names the checks; with a webhook that refuses pods in kube-system and
// has no endpoint, it fails and the report names the hazard.
func testNightlyCronJob(ctx context.Context, t *testing.T, p *kind.Provider) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	image := kindtest.FaultlineImage(ctx, t, root)
	nodes, err := p.Resolve(ctx, providers.Selector{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		load := exec.CommandContext(ctx, "sh", "-c", `docker save "$1" | docker exec -i "$2" ctr --namespace=k8s.io images import -`, "sh", image, n.Name)
		if out, err := load.CombinedOutput(); err != nil {
			t.Fatalf("load %s into %s: %v\n%s", image, n.Name, err, out)
		}
	}
	var cp string
	for _, n := range nodes {
		if n.Attributes[providers.AttrRole] == providers.RoleControlPlane {
			cp = n.Name
			break
		}
	}
	d := kind.ExecDocker{}
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := d.Run(ctx, append([]string{"exec", cp, "kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf"}, args...)...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// The manifests as a user applies them, with the image they built;
	// copied to the node's root (docker cp does not write into its tmpfs
	// /tmp).
	overlay := t.TempDir()
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(fmt.Sprintf(
		"resources: [../base]\nimages:\n  - {name: faultline.dev/faultline, newTag: %q}\n", strings.TrimPrefix(image, "faultline.dev/faultline:"))), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Run(ctx, "exec", cp, "rm", "-rf", "/faultline-deploy"); err != nil {
		t.Fatal(err)
	}
	for _, cpy := range [][]string{{filepath.Join(root, "deploy"), cp + ":/faultline-deploy"}, {overlay, cp + ":/faultline-deploy/test"}} {
		if _, err := d.Run(ctx, append([]string{"cp"}, cpy...)...); err != nil {
			t.Fatal(err)
		}
	}
	t.Log(kubectl("apply", "-k", "/faultline-deploy/test"))
	t.Cleanup(func() {
		_, _ = d.Run(context.Background(), "exec", cp, "kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf", "delete", "--ignore-not-found", "--wait=false", "-k", "/faultline-deploy/test")
	})

	c := p.Client()
	runJob := func(name string) (*batchv1.Job, *corev1.ConfigMap) {
		t.Helper()
		kubectl("-n", "faultline-system", "create", "job", "--from=cronjob/faultline-nightly", name)
		job := &batchv1.Job{}
		waitFor(ctx, t, "job "+name+" finishes", 3*time.Minute, func() (bool, string) {
			if err := c.Get(ctx, client.ObjectKey{Namespace: "faultline-system", Name: name}, job); err != nil {
				return false, err.Error()
			}
			return job.Status.Succeeded > 0 || job.Status.Failed > 0, fmt.Sprintf("active %d", job.Status.Active)
		})
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "faultline-system", Name: "faultline-report"}, cm); err != nil {
			t.Fatalf("report ConfigMap after job %s: %v\nlogs:\n%s", name, err, kubectl("-n", "faultline-system", "logs", "job/"+name))
		}
		return job, cm
	}

	job, cm := runJob("check-healthy")
	if job.Status.Succeeded != 1 {
		t.Fatalf("job on a healthy cluster failed; logs:\n%s", kubectl("-n", "faultline-system", "logs", "job/check-healthy"))
	}
	for _, want := range []string{`name="webhook-blocks-node-bringup"`, `name="calico-pool-too-small"`} {
		if !strings.Contains(cm.Data["junit.xml"], want) {
			t.Errorf("report junit.xml lacks the check %s:\n%s", want, cm.Data["junit.xml"])
		}
	}
	t.Logf("healthy: job succeeded; report summary.txt:\n%s", cm.Data["summary.txt"])
	if !strings.Contains(cm.Data["summary.txt"], "cluster context in-cluster: ") {
		t.Errorf("report summary.txt:\n%s", cm.Data["summary.txt"])
	}

	broken := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: broken-policy}
webhooks:
  - name: validate.broken.example.com
    clientConfig: {service: {namespace: default, name: no-such-policy-engine, path: /validate}}
    rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}
    failurePolicy: Fail
    sideEffects: None
    admissionReviewVersions: [v1]
`
	if _, err := d.Run(ctx, "exec", cp, "sh", "-c", `printf '%s' "$1" | kubectl --kubeconfig /etc/kubernetes/admin.conf apply -f -`, "sh", broken); err != nil {
		t.Fatal(err)
	}
	defer kubectl("delete", "validatingwebhookconfiguration", "broken-policy")
	job, cm = runJob("check-broken")
	if job.Status.Failed != 1 {
		t.Errorf("job with a broken webhook succeeded; logs:\n%s", kubectl("-n", "faultline-system", "logs", "job/check-broken"))
	}
	t.Logf("broken webhook: job failed %d; report summary.txt:\n%s", job.Status.Failed, cm.Data["summary.txt"])
	if s := cm.Data["summary.txt"]; !strings.Contains(s, "error") || !strings.Contains(s, "webhook-blocks-node-bringup") || !strings.Contains(s, "ValidatingWebhookConfiguration broken-policy") {
		t.Errorf("report summary.txt does not name the hazard:\n%s", s)
	}
}
