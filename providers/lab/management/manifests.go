package management

import (
	"bufio"
	"bytes"
	"embed"
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

// contractLabels are what clusterctl's kustomize layer adds to provider CRDs:
// without them Cluster API cannot tell which API version of an
// infrastructure, bootstrap or control-plane kind honours its contract
// ("cannot find any versions matching contract versions").
var contractLabels = map[string]string{
	"cluster.x-k8s.io/v1beta1": "v1beta1",
	"cluster.x-k8s.io/v1beta2": "v1beta2",
}

// manifests is what the management cluster is started with.
type manifests struct {
	crds       []*apiextensionsv1.CustomResourceDefinition
	mutating   []*admissionv1.MutatingWebhookConfiguration
	validating []*admissionv1.ValidatingWebhookConfiguration
}

func loadManifests() (*manifests, error) {
	m := &manifests{}
	for _, dir := range providerDirs {
		crdDir := path.Join("manifests", dir, "crd")
		entries, err := fs.ReadDir(manifestFS, crdDir)
		if err != nil {
			return nil, fmt.Errorf("read embedded %s: %w (run hack/lab-manifests.sh)", crdDir, err)
		}
		for _, e := range entries {
			file := path.Join(crdDir, e.Name())
			b, err := manifestFS.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("read embedded %s: %w", file, err)
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(b, crd); err != nil {
				return nil, fmt.Errorf("decode embedded %s: %w", file, err)
			}
			if dir != "core" {
				if crd.Labels == nil {
					crd.Labels = map[string]string{}
				}
				for k, v := range contractLabels {
					crd.Labels[k] = v
				}
			}
			m.crds = append(m.crds, crd)
		}
		if err := m.addWebhooks(dir); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// addWebhooks reads one provider's webhook configurations. Every provider
// names them mutating-/validating-webhook-configuration, so they are
// renamed per provider, as Cluster API's own envtest does.
func (m *manifests) addWebhooks(dir string) error {
	file := path.Join("manifests", dir, "webhooks.yaml")
	b, err := manifestFS.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read embedded %s: %w", file, err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read embedded %s: %w", file, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return fmt.Errorf("decode embedded %s: %w", file, err)
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			c := &admissionv1.MutatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, c); err != nil {
				return fmt.Errorf("decode embedded %s: %w", file, err)
			}
			c.Name = dir + "-" + c.Name
			m.mutating = append(m.mutating, c)
		case "ValidatingWebhookConfiguration":
			c := &admissionv1.ValidatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, c); err != nil {
				return fmt.Errorf("decode embedded %s: %w", file, err)
			}
			c.Name = dir + "-" + c.Name
			m.validating = append(m.validating, c)
		default:
			return fmt.Errorf("embedded %s: unexpected kind %q", file, meta.Kind)
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
