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

// TestRedactFreeText: an Event or a condition may quote a credential in
// its message, as a command line or a config says it; it goes, and the
// words around it, and names that only mention a secret, stay. Before,
// only URLs' user info went, and these reached events.json, the report
// and the dumps.
func TestRedactFreeText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"login failed: password=hunter2 for admin":               "login failed: password=<redacted> for admin",
		`retrying with token: "abc def", then`:                   `retrying with token: <redacted>, then`,
		"Authorization: Bearer eyJhbGciOi.payload.sig":           "Authorization: Bearer <redacted>",
		"api-key=K1, secret:'s2'; pwd = p3":                      "api-key=<redacted>, secret:<redacted>; pwd = <redacted>",
		"dataSecretName cp-bootstrap is not ready":               "dataSecretName cp-bootstrap is not ready",
		"the token was rotated at 10:00":                         "the token was rotated at 10:00",
		"see https://admin:hunter2@vc.example.com/sdk?token=zz9": "see https://<redacted>@vc.example.com/sdk?token=<redacted>",
	} {
		obj := map[string]any{"message": in}
		Redact(obj)
		if got := obj["message"]; got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}
