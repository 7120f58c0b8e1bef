package management

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The CRDs and webhook configurations of Cluster API and CAPV, copied from
// the module cache by hack/lab-manifests.sh at the versions go.mod requires.
//
//go:embed manifests
var manifestFS embed.FS

// providerDirs are the manifest folders, one per provider. The folder name
// is also the Cluster API provider type, which decides the contract labels.
var providerDirs = []string{"core", "bootstrap", "controlplane", "infrastructure"}

// addContractLabels adds what clusterctl's kustomize layer adds to a
// provider's CRDs: without them Cluster API cannot tell which API version
// of an infrastructure, bootstrap or control-plane kind honours its
// contract ("cannot find any versions matching contract versions"). Each
// contract's label names the CRD's version of the same name where the
// CRD serves it, as the providers' kustomizations do (CAPV v1.15, which
// serves v1beta1 only, honours contract v1beta1 alone).
func addContractLabels(crd *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if !v.Served || (v.Name != "v1beta1" && v.Name != "v1beta2") {
			continue
		}
		if crd.Labels == nil {
			crd.Labels = map[string]string{}
		}
		crd.Labels["cluster.x-k8s.io/"+v.Name] = v.Name
	}
}

// manifests is what the management cluster is started with.
type manifests struct {
	crds []*apiextensionsv1.CustomResourceDefinition
	// provider is each CRD's provider folder, by index.
	provider   []string
	mutating   []*admissionv1.MutatingWebhookConfiguration
	validating []*admissionv1.ValidatingWebhookConfiguration
	// sum is the manifests' as read, before anything points them at a
	// start's webhook servers: the stored state's name (stateFolder).
	sum string
}

// deepCopy is a copy of mf that envtest may point at a start's webhook
// server without changing mf: it rewrites a client configuration once.
func (mf *manifests) deepCopy() *manifests {
	c := &manifests{provider: mf.provider, sum: mf.sum}
	for _, crd := range mf.crds {
		c.crds = append(c.crds, crd.DeepCopy())
	}
	for _, w := range mf.mutating {
		c.mutating = append(c.mutating, w.DeepCopy())
	}
	for _, w := range mf.validating {
		c.validating = append(c.validating, w.DeepCopy())
	}
	return c
}

// embeddedManifests are the compiled release's manifests.
func embeddedManifests() (*manifests, error) {
	sub, err := fs.Sub(manifestFS, "manifests")
	if err != nil {
		return nil, err
	}
	return loadManifests(sub, "embedded")
}

// loadManifests reads the manifests in fsys (laid out as hack/lab-manifests.sh
// writes them); where names fsys in errors.
func loadManifests(fsys fs.FS, where string) (*manifests, error) {
	m := &manifests{}
	for _, dir := range providerDirs {
		crdDir := path.Join(dir, "crd")
		entries, err := fs.ReadDir(fsys, crdDir)
		if err != nil {
			return nil, fmt.Errorf("read %s %s: %w", where, crdDir, err)
		}
		for _, e := range entries {
			file := path.Join(crdDir, e.Name())
			b, err := fs.ReadFile(fsys, file)
			if err != nil {
				return nil, fmt.Errorf("read %s %s: %w", where, file, err)
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(b, crd); err != nil {
				return nil, fmt.Errorf("decode %s %s: %w", where, file, err)
			}
			if dir != "core" {
				addContractLabels(crd)
			}
			m.crds = append(m.crds, crd)
			m.provider = append(m.provider, dir)
		}
		if err := m.addWebhooks(fsys, where, dir); err != nil {
			return nil, err
		}
	}
	var err error
	m.sum, err = m.digest()
	return m, err
}

// digest is a digest of the manifests.
func (m *manifests) digest() (string, error) {
	h := sha256.New()
	for _, part := range []any{m.crds, m.mutating, m.validating} {
		b, err := json.Marshal(part)
		if err != nil {
			return "", fmt.Errorf("manifests: %w", err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// addWebhooks reads one provider's webhook configurations. Every provider
// names them mutating-/validating-webhook-configuration, so they are
// renamed per provider, as Cluster API's own envtest does.
func (m *manifests) addWebhooks(fsys fs.FS, where, dir string) error {
	file := path.Join(dir, "webhooks.yaml")
	b, err := fs.ReadFile(fsys, file)
	if err != nil {
		return fmt.Errorf("read %s %s: %w", where, file, err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s %s: %w", where, file, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return fmt.Errorf("decode %s %s: %w", where, file, err)
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			c := &admissionv1.MutatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, c); err != nil {
				return fmt.Errorf("decode %s %s: %w", where, file, err)
			}
			c.Name = dir + "-" + c.Name
			m.mutating = append(m.mutating, c)
		case "ValidatingWebhookConfiguration":
			c := &admissionv1.ValidatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, c); err != nil {
				return fmt.Errorf("decode %s %s: %w", where, file, err)
			}
			c.Name = dir + "-" + c.Name
			m.validating = append(m.validating, c)
		default:
			return fmt.Errorf("%s %s: unexpected kind %q", where, file, meta.Kind)
		}
	}
}

// crdFor returns the CRD serving group/kind, for the contract lookups.
func (m *manifests) crdFor(group, kind string) *apiextensionsv1.CustomResourceDefinition {
	for _, c := range m.crds {
		if c.Spec.Group == group && strings.EqualFold(c.Spec.Names.Kind, kind) {
			return c
		}
	}
	return nil
}

// storageVersion is the version crd stores, or "" for none.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}
