package artifacts

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestRedact: credentials in fields and in URLs go; names of secrets and
// the rest stay.
func TestRedact(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{"name": "cp", "managedFields": []any{map[string]any{"manager": "x"}},
			"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": `{"password":"hunter2"}`, "note": "see https://admin:hunter2@vc.example.com/sdk"}},
		"spec": map[string]any{
			"bootstrap":         map[string]any{"dataSecretName": "cp-bootstrap"},
			"kubeadmConfigSpec": map[string]any{"files": []any{map[string]any{"path": "/etc/key", "content": "hunter2"}}},
			"identity":          map[string]any{"password": "hunter2", "Token": "hunter2", "client-key-data": "hunter2"},
			"server":            "https://127.0.0.1:6443",
		},
	}
	Redact(obj)
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, gone := range []string{"hunter2", "managedFields", "last-applied"} {
		if strings.Contains(got, gone) {
			t.Errorf("%q left in:\n%s", gone, got)
		}
	}
	for _, kept := range []string{"dataSecretName: cp-bootstrap", "path: /etc/key", "server: https://127.0.0.1:6443", "https://<redacted>@vc.example.com/sdk"} {
		if !strings.Contains(got, kept) {
			t.Errorf("%q missing from:\n%s", kept, got)
		}
	}
}
