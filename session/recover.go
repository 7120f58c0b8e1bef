package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// Reconnector reaches the providers of a journal's pending faults again,
// for engine.Recover (its Check and Reconnect): from each entry's typed
// record (capi.Record, vsphere.Record, kind.JournalRecord), once per
// vCenter and per management cluster, and only where the allow-lists say.
type Reconnector struct {
	// VCenter holds the credentials (and, from flags, a URL that
	// overrides the journal's) and the vCenter allow-list.
	VCenter VCenterConfig
	// URL, when set (--vcenter-url), is the vCenter to reach instead of
	// the one a journal records.
	URL string
	// Contexts are the kubeconfig contexts (kind-NAME for kind) whose
	// faults may be undone.
	Contexts []string
	// AcceptThumbprint, after vCenter's certificate was renewed, is the
	// new certificate's thumbprint to trust instead of the recorded one.
	AcceptThumbprint string
	// Kubeconfig and Context, when Kubeconfig is set (recover
	// --kubeconfig, on a host other than the one that ran the faults),
	// reach the management cluster instead of the kubeconfig a journal
	// records; it must still be the server and CA recorded.
	Kubeconfig, Context string

	opened  map[string]providers.Provider
	closers []func(context.Context) error
}

// ErrLabGone is why a lab's faults need no undo.
var ErrLabGone = fmt.Errorf("%w: the embedded lab died with the run that started it; nothing of it is left to undo", engine.ErrProviderGone)

// Check refuses a pending fault whose target the allow-lists do not name,
// or whose recorded identity is not what its kubeconfig reaches now.
func (r *Reconnector) Check(e engine.JournalEntry) error {
	d, err := driverFor(e.Provider.Name)
	if err != nil {
		return nil // Reconnect says it cannot reconnect.
	}
	return d.check(r, e.Provider)
}

// Reconnect reaches the provider of a pending fault that Check let through.
func (r *Reconnector) Reconnect(ctx context.Context, e engine.JournalEntry) (providers.Provider, error) {
	d, err := driverFor(e.Provider.Name)
	if err != nil {
		return nil, fmt.Errorf("provider %q in journal: faultline cannot reconnect to it", e.Provider.Name)
	}
	return d.reopen(r, ctx, e.Provider)
}

// Close closes what was reached.
func (r *Reconnector) Close(ctx context.Context) error {
	var errs []error
	for _, closeFn := range r.closers {
		errs = append(errs, closeFn(ctx))
	}
	r.closers = nil
	return errors.Join(errs...)
}

// open opens cfg once per key.
func (r *Reconnector) open(ctx context.Context, key string, cfg Config) (providers.Provider, error) {
	if p, ok := r.opened[key]; ok && key != "" {
		return p, nil
	}
	cfg.Log = logr.Discard()
	s, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.closers = append(r.closers, s.Close)
	if r.opened == nil {
		r.opened = map[string]providers.Provider{}
	}
	r.opened[key] = s.Provider
	return s.Provider, nil
}

func checkLab(*Reconnector, providers.ProviderRef) error { return nil }

func reopenLab(*Reconnector, context.Context, providers.ProviderRef) (providers.Provider, error) {
	return nil, ErrLabGone
}

// vcenterOf is the vCenter config of a record: the flags' URL over the
// recorded one, TLS pinned to the recorded certificate unless a renewed
// one is accepted.
func (r *Reconnector) vcenterOf(rec vsphere.Record) VCenterConfig {
	v := r.VCenter
	v.Config = rec.RecoverConfig(v.Config)
	if r.URL != "" {
		v.URL = r.URL
	}
	if r.AcceptThumbprint != "" {
		v.Thumbprint = r.AcceptThumbprint
	}
	return v
}

func (r *Reconnector) checkVSphere(ref providers.ProviderRef) error {
	rec, _ := vsphere.RecordOf(ref.Config)
	u, err := r.vcenterOf(rec).Endpoint()
	if err != nil {
		return err
	}
	if !AllowedVCenter(r.VCenter.Allowed, u) {
		return fmt.Errorf("vCenter %s is not allowed (--allow-vcenter %s or $%s)", u.Host, u.Hostname(), EnvAllowedVCenters)
	}
	return nil
}

func (r *Reconnector) reopenVSphere(ctx context.Context, ref providers.ProviderRef) (providers.Provider, error) {
	rec, _ := vsphere.RecordOf(ref.Config)
	v := r.vcenterOf(rec)
	p, err := r.open(ctx, rec.URL, Config{Provider: ProviderVSphere, VCenter: v})
	if err != nil && r.AcceptThumbprint == "" {
		err = renewedCertificate(ctx, v.Config, err)
	}
	return p, err
}

// renewedCertificate explains a failed connection to a journal's vCenter
// whose certificate is no longer the one the journal recorded: it shows
// both thumbprints and how to accept the new one. Other errors pass.
func renewedCertificate(ctx context.Context, cfg vsphere.Config, err error) error {
	u, uerr := cfg.Endpoint()
	if uerr != nil || cfg.Thumbprint == "" {
		return err
	}
	now, terr := vsphere.PresentedThumbprint(ctx, u)
	if terr != nil || strings.EqualFold(strings.ReplaceAll(now, ":", ""), strings.ReplaceAll(cfg.Thumbprint, ":", "")) {
		return err
	}
	return fmt.Errorf("vCenter %s now presents a certificate with thumbprint %s; when the fault was injected it presented %s. If, and only if, that certificate was renewed since, recover with --accept-thumbprint %s (%w)", u.Host, now, cfg.Thumbprint, now, err)
}

func (r *Reconnector) checkKind(ref providers.ProviderRef) error {
	name := kind.JournalRecordOf(ref).Cluster
	state, err := kind.DefaultState()
	if err != nil {
		return err
	}
	if !kind.IsRecorded(state, name) && !Allowed(r.Contexts, EnvAllowedContexts, "kind-"+name) {
		return fmt.Errorf("kind cluster %s was not created by faultline and context kind-%s is not allowed (--allow-context or $%s)", name, name, EnvAllowedContexts)
	}
	return nil
}

func (r *Reconnector) reopenKind(ctx context.Context, ref providers.ProviderRef) (providers.Provider, error) {
	rec := kind.JournalRecordOf(ref)
	return r.open(ctx, "", Config{
		Provider:   ProviderKind,
		Management: ManagementConfig{Allowed: r.Contexts},
		Kind:       KindConfig{Cluster: rec.Cluster, Kubeconfig: rec.Kubeconfig},
	})
}

// checkCAPI refuses a management cluster whose context is not allowed,
// or that its kubeconfig no longer reaches as recorded (another server,
// another CA, or TLS not verified).
func (r *Reconnector) checkCAPI(ref providers.ProviderRef) error {
	rec := r.reachCAPI(capi.RecordOf(ref))
	if rec.Kubeconfig == "" {
		return nil // reopen says it cannot reconnect.
	}
	if !Allowed(r.Contexts, EnvAllowedContexts, rec.Context) {
		return fmt.Errorf("context %q is not allowed (--allow-context %s or $%s)", rec.Context, rec.Context, EnvAllowedContexts)
	}
	if rec.Server == "" {
		return fmt.Errorf("the entry records no identity (server and CA) of context %q", rec.Context)
	}
	server, ca, err := capi.Identity(rec.Kubeconfig, rec.Context)
	if err != nil {
		return err
	}
	switch {
	case server != rec.Server:
		return fmt.Errorf("context %q now reaches %s, not %s where the fault went", rec.Context, server, rec.Server)
	case ca == "":
		return fmt.Errorf("context %q does not verify TLS (no CA, or insecure-skip-tls-verify)", rec.Context)
	case ca != rec.CASHA256:
		return fmt.Errorf("context %q trusts another CA than when the fault was injected", rec.Context)
	}
	return nil
}

// reopenCAPI reaches a management cluster again with the same kubeconfig
// and context, which checkCAPI found allowed and the same.
func (r *Reconnector) reopenCAPI(ctx context.Context, ref providers.ProviderRef) (providers.Provider, error) {
	rec := r.reachCAPI(capi.RecordOf(ref))
	if rec.Kubeconfig == "" {
		return nil, fmt.Errorf("provider %q in journal: it records no kubeconfig; faultline cannot reconnect to it", ref.Name)
	}
	// The vCenter behind the cluster, where its VM faults went: the one
	// recorded (TLS pinned to its certificate), or the flags'.
	vc := r.VCenter
	if rec.VCenter != nil {
		vc = r.vcenterOf(*rec.VCenter)
		if u, err := vc.Endpoint(); err == nil && !AllowedVCenter(r.VCenter.Allowed, u) {
			return nil, fmt.Errorf("vCenter %s is not allowed (--allow-vcenter %s or $%s)", u.Host, u.Hostname(), EnvAllowedVCenters)
		}
	}
	return r.open(ctx, rec.Kubeconfig+"|"+rec.Context, Config{
		Provider:   ProviderCAPI,
		Management: ManagementConfig{Kubeconfig: rec.Kubeconfig, Context: rec.Context, Allowed: r.Contexts},
		VCenter:    vc,
	})
}

// reachCAPI is rec with the kubeconfig and context to reach it through:
// the recorded ones, or Kubeconfig's (its Context, or its current one).
func (r *Reconnector) reachCAPI(rec capi.Record) capi.Record {
	if r.Kubeconfig == "" {
		return rec
	}
	rec.Kubeconfig, rec.Context = r.Kubeconfig, r.Context
	if rec.Context == "" {
		if raw, err := clientcmd.LoadFromFile(r.Kubeconfig); err == nil {
			rec.Context = raw.CurrentContext
		}
	}
	return rec
}

// RecoverCommand is the command that undoes what journal left pending:
// `faultline recover` with the allow-list entries its provider's record
// names (recover asks for them again).
func RecoverCommand(journal string, ref providers.ProviderRef) string {
	cmd := "faultline recover " + journal
	if d, err := driverFor(ref.Name); err == nil && d.allow != nil {
		vcenter, context := d.allow(ref)
		if vcenter != nil {
			if host, err := vcenter.Host(); err == nil {
				cmd += " --allow-vcenter " + host
			}
		}
		if context != "" {
			cmd += " --allow-context " + context
		}
	}
	return cmd
}

// allowVSphere and allowCAPI are what a record asks of recover's
// allow-lists: the vCenter, and the management cluster's context.
func allowVSphere(ref providers.ProviderRef) (*vsphere.Record, string) {
	if rec, ok := vsphere.RecordOf(ref.Config); ok {
		return &rec, ""
	}
	return nil, ""
}

func allowCAPI(ref providers.ProviderRef) (*vsphere.Record, string) {
	rec := capi.RecordOf(ref)
	return rec.VCenter, rec.Context
}
