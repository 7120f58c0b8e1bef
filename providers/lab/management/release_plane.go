package management

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/yaml"

	"github.com/faultline-dev/faultline/providers/capi/versioned"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// managerStopGrace bounds a manager's own stop before it is killed.
const managerStopGrace = 5 * time.Second

// managerReadyTimeout bounds the wait for the managers to be ready.
const managerReadyTimeout = 2 * time.Minute

// startManagers runs the stack's manager binaries against the management
// cluster, once its manifests (installed by Start with their conversions
// pointed at the managers) are in: it installs the webhook configurations,
// starts the four and waits until each is ready.
func (m *Plane) startManagers(ctx context.Context, in Input, mf *manifests) error {
	dir := filepath.Join(in.Dir, "managers")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the managers' folder: %w", err)
	}
	files := managerFiles{
		kubeconfig:  filepath.Join(dir, "kubeconfig"),
		certDir:     dir,
		credentials: filepath.Join(dir, "capv-credentials.yaml"),
	}
	if err := m.WriteKubeconfig(files.kubeconfig); err != nil {
		return err
	}
	creds, err := yaml.Marshal(map[string]string{"username": in.VCUser, "password": in.VCPass})
	if err != nil {
		return err
	}
	if err := os.WriteFile(files.credentials, creds, 0o600); err != nil {
		return fmt.Errorf("write CAPV's credentials: %w", err)
	}
	if err := m.createWebhooks(ctx, mf); err != nil {
		return err
	}
	for _, mg := range m.managers {
		if err := mg.start(filepath.Join(in.Dir, "bin"), dir, mg.args(files, in.Profile)); err != nil {
			return err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, managerReadyTimeout)
	defer cancel()
	for _, mg := range m.managers {
		if err := mg.waitReady(rctx); err != nil {
			return err
		}
	}
	return nil
}

// servingCert writes a certificate for 127.0.0.1, signed by a CA of its
// own, as tls.crt and tls.key in dir (the managers' webhook servers read
// them) and returns the CA bundle kube-apiserver trusts them with.
func servingCert(dir string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	crt, key, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		return nil, fmt.Errorf("webhook serving certificate: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600); err != nil {
		return nil, err
	}
	// The bundle holds the certificate, then its CA.
	return crt, nil
}

// pointAt makes every CRD with several versions convert through, and every
// webhook call, the manager that serves its provider, on 127.0.0.1.
func (mf *manifests) pointAt(ms []*manager, caBundle []byte) error {
	port := map[string]int{}
	for _, m := range ms {
		port[m.provider] = m.webhookPort
	}
	url := func(provider, path string) (*string, error) {
		p, ok := port[provider]
		if !ok {
			return nil, fmt.Errorf("no manager serves the %s provider's webhooks", provider)
		}
		return ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", p, path)), nil
	}
	for i, crd := range mf.crds {
		if len(crd.Spec.Versions) < 2 {
			continue
		}
		u, err := url(mf.provider[i], "/convert")
		if err != nil {
			return err
		}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: u, CABundle: caBundle},
				ConversionReviewVersions: []string{"v1", "v1beta1"},
			},
		}
	}
	point := func(name string, cc *admissionv1.WebhookClientConfig) error {
		provider, _, _ := strings.Cut(name, "-")
		path := ""
		if cc.Service != nil && cc.Service.Path != nil {
			path = *cc.Service.Path
		}
		u, err := url(provider, path)
		if err != nil {
			return err
		}
		*cc = admissionv1.WebhookClientConfig{URL: u, CABundle: caBundle}
		return nil
	}
	var errs []error
	for _, c := range mf.mutating {
		for i := range c.Webhooks {
			errs = append(errs, point(c.Name, &c.Webhooks[i].ClientConfig))
		}
	}
	for _, c := range mf.validating {
		for i := range c.Webhooks {
			errs = append(errs, point(c.Name, &c.Webhooks[i].ClientConfig))
		}
	}
	return errors.Join(errs...)
}

// createWebhooks installs the stack's webhook configurations, replacing
// those of the same name (an upgrade's).
func (m *Plane) createWebhooks(ctx context.Context, mf *manifests) error {
	c, err := client.New(m.cfg, client.Options{Scheme: m.scheme})
	if err != nil {
		return fmt.Errorf("management cluster client: %w", err)
	}
	var objs []client.Object
	for _, o := range mf.mutating {
		objs = append(objs, o)
	}
	for _, o := range mf.validating {
		objs = append(objs, o)
	}
	for _, o := range objs {
		if err := createOrReplace(ctx, c, o); err != nil {
			return fmt.Errorf("install %s: %w", o.GetName(), err)
		}
	}
	return nil
}

// createOrReplace creates o, or replaces the object of its name.
func createOrReplace(ctx context.Context, c client.Client, o client.Object) error {
	err := c.Create(ctx, o)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur := o.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
		return err
	}
	o.SetResourceVersion(cur.GetResourceVersion())
	return c.Update(ctx, o)
}

// startClient is the lab's cached client of the management cluster when
// the controllers run as processes: reads come from informers as the
// in-process manager's do, in the API versions the stack serves.
func (m *Plane) startClient(ctx context.Context, in Input) error {
	c, err := m.ownClient(ctx, in)
	m.client = c
	return err
}

// ownClient starts a cache of the management cluster for the lab alone
// (mgr) and returns a client over it in the compiled API versions.
func (m *Plane) ownClient(ctx context.Context, in Input) (client.Client, error) {
	sync := in.Profile.SyncPeriod
	cl, err := cluster.New(m.cfg, func(o *cluster.Options) {
		o.Scheme = m.scheme
		o.Cache.SyncPeriod = &sync
		o.Client.Cache = &client.CacheOptions{Unstructured: true}
	})
	if err != nil {
		return nil, fmt.Errorf("management cluster client: %w", err)
	}
	m.mgr = cl
	c, err := versioned.New(cl.GetClient(), m.cfg)
	if err != nil {
		return nil, err
	}
	return c, m.run(ctx, cl)
}

// Stack is the stack the plane runs.
func (m *Plane) Stack() labconfig.Stack { return m.stack }

// ManagerVersions are the versions the stack's managers printed at start,
// by binary ("capi-manager": "v1.12.5"); for the compiled stack, the
// versions go.mod links, under "faultline" (one process runs them all).
func (m *Plane) ManagerVersions() map[string]string {
	if m.stack.Compiled {
		return map[string]string{"faultline": "cluster-api " + m.stack.ClusterAPI + ", cluster-api-provider-vsphere " + m.stack.CAPV}
	}
	return managerVersions(m.managers)
}

// managerVersions are the versions ms printed at start, by binary.
func managerVersions(ms []*manager) map[string]string {
	out := map[string]string{}
	for _, mg := range ms {
		out[mg.name] = mg.version()
	}
	return out
}
