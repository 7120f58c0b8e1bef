package main

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// TestIntegrationArtifactsRedacted runs a scenario that fails against the
// lab's management cluster and vCenter, reached through a kubeconfig and a
// vCenter URL that both carry a password, and proves neither password is
// in any artifact (result, timeline, journal, JUnit, report, dumps) nor in
// the output; and that the failure left its dumps, linked from the report.
func TestIntegrationArtifactsRedacted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, paths := startTestLab(t, ctx)
	const kubePassword, vcPassword = "planted-kubeconfig-password-7c1e", "planted-vcenter-password-91ab"

	kc, err := clientcmd.LoadFromFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range kc.AuthInfos {
		a.Username, a.Password = "admin", kubePassword
	}
	kubeconfig := filepath.Join(t.TempDir(), "planted.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	vc := l.Sim().URL()
	vc.User = url.UserPassword("user", vcPassword)

	dir := t.TempDir()
	var out, errOut bytes.Buffer
	args := []string{"run", "power-off-worker", "--provider", "capi", "--kubeconfig", kubeconfig, "--allow-context", kc.CurrentContext,
		"--vcenter-url", vc.String(), "--vcenter-ca-file", l.Sim().CAFile(), "--allow-vcenter", vc.Host, "--artifacts", dir, "-v", "2"}
	for _, p := range []string{"notready", "unhealthy", "deleted", "destroyed", "replacement", "restored"} {
		args = append(args, "--set", "budget."+p+"=1s")
	}
	code := execute(args, &out, &errOut)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a failed run)\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
	for name, text := range map[string]string{"stdout": out.String(), "stderr": errOut.String()} {
		for _, p := range []string{kubePassword, vcPassword} {
			if strings.Contains(text, p) {
				t.Errorf("%s holds the planted password %s", name, p)
			}
		}
	}
	var files []string
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files = append(files, rel)
		for _, p := range []string{kubePassword, vcPassword} {
			if bytes.Contains(b, []byte(p)) {
				t.Errorf("%s holds the planted password %s", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("artifacts: %s", strings.Join(files, ", "))
	report, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dump := range []string{"dumps/machines.yaml", "dumps/clusters.yaml", "dumps/nodes.yaml", "dumps/vcenter-vms.yaml", "dumps/machinehealthchecks.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, dump)); err != nil {
			t.Errorf("dump %s: %v", dump, err)
		}
		if !bytes.Contains(report, []byte(`href="`+dump+`"`)) {
			t.Errorf("report.html does not link %s", dump)
		}
	}
	junit, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil || !bytes.Contains(junit, []byte("not reached within its budget 1s")) {
		t.Errorf("junit.xml: %v\n%s", err, junit)
	}
}
