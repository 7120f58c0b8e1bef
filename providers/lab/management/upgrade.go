package management

import (
	"context"
	"errors"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// Upgrade replaces the plane's stack with in.Stack in place, as
// `clusterctl upgrade apply` does: the old managers stop first (clusterctl
// scales every provider down before it installs any), the new release's
// CRDs replace the old ones with their conversions pointed at the new
// managers, its webhook configurations replace the old ones, and its
// managers start; every object in the management cluster is kept. The
// new managers migrate stored objects to their storage versions
// themselves (Cluster API's CRD migrator). progress gets a line per stage.
//
// From the compiled stack, the lab's client is handed over to a cache of
// its own first and the in-process manager stopped (stopCompiled). As
// clusterctl, Upgrade refuses an older release.
func (m *Plane) Upgrade(ctx context.Context, in Input, progress func(string)) error {
	if in.Stack == (labconfig.Stack{}) {
		in.Stack = labconfig.DefaultStack()
	}
	if err := m.checkUpgrade(in.Stack); err != nil {
		return err
	}
	was := m.ManagerVersions()
	if m.stack.Compiled {
		progress(fmt.Sprintf("stopping the %s controllers in faultline's process", m.stack.Name))
		if err := m.stopCompiled(ctx, in); err != nil {
			return fmt.Errorf("upgrade to %s: %w", in.Stack, err)
		}
	} else {
		progress(fmt.Sprintf("stopping the %s managers", m.stack.Name))
		if err := stopAll(m.managers); err != nil {
			return err
		}
	}
	m.managers = nil
	mf, err := m.manifests(in)
	if err != nil {
		return err
	}
	progress(fmt.Sprintf("installing the %s CRDs and webhook configurations", in.Stack.Name))
	if in.Stack.Compiled {
		err = m.installCompiled(ctx, mf, in)
	} else {
		err = m.installManifests(mf)
	}
	if err != nil {
		return fmt.Errorf("upgrade to %s: %w", in.Stack, err)
	}
	progress(fmt.Sprintf("starting the %s controllers", in.Stack.Name))
	if in.Stack.Compiled {
		err = m.setup(ctx, m.scheme, mf, in)
	} else {
		err = m.startManagers(ctx, in, mf)
	}
	if err == nil {
		err = m.removeWebhooksNotIn(ctx, mf)
	}
	if err != nil {
		return fmt.Errorf("upgrade to %s: %w", in.Stack, err)
	}
	m.upgrades = append(m.upgrades, Upgraded{From: m.stack, Managers: was})
	m.stack = in.Stack
	// As clusterctl upgrade apply, the inventory names the new versions.
	if err := m.writeInventory(ctx); err != nil {
		return fmt.Errorf("upgrade to %s: %w", in.Stack, err)
	}
	return nil
}

// stopCompiled hands the lab's client over to a cache of its own, then
// stops the compiled stack's manager (the first run: its controllers,
// webhooks and caches), as clusterctl scales a provider down.
func (m *Plane) stopCompiled(ctx context.Context, in Input) error {
	h, ok := m.client.(*handover)
	if !ok || len(m.runs) == 0 {
		return fmt.Errorf("the %s controllers are not running in this process", m.stack)
	}
	c, err := m.ownClient(ctx, in)
	if err != nil {
		return err
	}
	h.set(c)
	r := m.runs[0]
	m.runs = m.runs[1:]
	return r.stop()
}

// checkUpgrade refuses what clusterctl would: the same stack, an older
// release.
func (m *Plane) checkUpgrade(to labconfig.Stack) error {
	switch {
	case to == m.stack:
		return fmt.Errorf("the management plane already runs %s", to)
	case older(to.ClusterAPI, m.stack.ClusterAPI) || older(to.CAPV, m.stack.CAPV):
		return fmt.Errorf("%s is older than the running %s: clusterctl does not downgrade providers", to, m.stack)
	}
	return nil
}

// older tells whether release a is older than b (both semantic versions;
// one that does not parse is not older).
func older(a, b string) bool {
	va, errA := version.ParseSemantic(a)
	vb, errB := version.ParseSemantic(b)
	return errA == nil && errB == nil && va.LessThan(vb)
}

// installManifests installs a stack of processes' CRDs, replacing the old
// ones; startManagers installs its webhook configurations.
func (m *Plane) installManifests(mf *manifests) error {
	if err := envtest.CreateCRDs(m.cfg, mf.crds); err != nil {
		return err
	}
	return envtest.WaitForCRDs(m.cfg, mf.crds, envtest.CRDInstallOptions{MaxTime: crdWait, PollInterval: crdPoll})
}

// installCompiled installs the compiled stack's CRDs and webhook
// configurations pointed at a webhook server of this process, as Start
// does through envtest.
func (m *Plane) installCompiled(ctx context.Context, mf *manifests, in Input) error {
	wo := envtest.WebhookInstallOptions{
		MutatingWebhooks:    mf.mutating,
		ValidatingWebhooks:  mf.validating,
		LocalServingHost:    "127.0.0.1",
		LocalServingCertDir: in.webhookCertDir(),
	}
	if err := wo.PrepWithoutInstalling(); err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(m.cfg, envtest.CRDInstallOptions{CRDs: mf.crds, Scheme: m.scheme, WebhookOptions: wo, MaxTime: crdWait, PollInterval: crdPoll}); err != nil {
		return err
	}
	if err := wo.Install(m.cfg); err != nil {
		return err
	}
	m.env.WebhookInstallOptions = wo
	return ctx.Err()
}

// removeWebhooksNotIn deletes the webhook configurations of the old stack
// that the new one does not have, as clusterctl deletes an old provider's
// components.
func (m *Plane) removeWebhooksNotIn(ctx context.Context, mf *manifests) error {
	c, err := client.New(m.cfg, client.Options{Scheme: m.scheme})
	if err != nil {
		return err
	}
	var mut admissionv1.MutatingWebhookConfigurationList
	var val admissionv1.ValidatingWebhookConfigurationList
	if err := errors.Join(c.List(ctx, &mut), c.List(ctx, &val)); err != nil {
		return err
	}
	var errs []error
	for i := range mut.Items {
		if !slices.ContainsFunc(mf.mutating, func(o *admissionv1.MutatingWebhookConfiguration) bool { return o.Name == mut.Items[i].Name }) {
			errs = append(errs, ignoreNotFound(c.Delete(ctx, &mut.Items[i])))
		}
	}
	for i := range val.Items {
		if !slices.ContainsFunc(mf.validating, func(o *admissionv1.ValidatingWebhookConfiguration) bool { return o.Name == val.Items[i].Name }) {
			errs = append(errs, ignoreNotFound(c.Delete(ctx, &val.Items[i])))
		}
	}
	return errors.Join(errs...)
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Upgraded is a stack the plane ran before an upgrade, with the versions
// its managers printed.
type Upgraded struct {
	From     labconfig.Stack
	Managers map[string]string
}

// Upgrades are the stacks the plane ran before, oldest first.
func (m *Plane) Upgrades() []Upgraded { return m.upgrades }
