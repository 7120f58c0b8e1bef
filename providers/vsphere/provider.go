package vsphere

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/session/keepalive"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/providers"

	"github.com/faultline-dev/faultline/internal/regularfile"
)

// Compile-time checks of the capabilities this provider offers.
var (
	_ providers.Provider    = (*Provider)(nil)
	_ providers.VMPower     = (*Provider)(nil)
	_ providers.VMLifecycle = (*Provider)(nil)
	_ providers.VMNetwork   = (*Provider)(nil)
	_ providers.Watcher     = (*Provider)(nil)
	_ providers.Describer   = (*Provider)(nil)
	_ providers.Inventory   = (*Provider)(nil)
	// Node faults, when given a guest login (GuestOperations).
	_ providers.NodeKubelet         = (*Provider)(nil)
	_ providers.NodeStaticPods      = (*Provider)(nil)
	_ providers.CapabilityCondition = (*Provider)(nil)
)

// keepAliveIdle keeps the session alive through long observation windows;
// vCenter drops idle sessions after 30 minutes by default.
const keepAliveIdle = 10 * time.Minute

// Provider is a logged-in connection to one vCenter and datacenter.
type Provider struct {
	name     string
	client   *vim25.Client
	sessions *session.Manager
	finder   *find.Finder
	dc       *object.Datacenter
	endpoint *url.URL
	cfg      Config
	log      logr.Logger
	// guest is the guest OS login of node faults, or nil (GuestOperations).
	guest *GuestAuth
	// readOnly: every method that would change vCenter is refused
	// (WithReadOnly).
	readOnly bool
	// serverThumbprint is the SHA-256 thumbprint of the certificate
	// vCenter presented, recorded in Ref as its identity; every new
	// connection's handshake sets it.
	serverThumbprint atomic.Pointer[string]
}

// Option configures New.
type Option func(*Provider)

// WithLogger sets the logger (discarded by default).
func WithLogger(l logr.Logger) Option { return func(p *Provider) { p.log = l } }

// WithName sets the provider name recorded in results (default "vsphere").
func WithName(name string) Option { return func(p *Provider) { p.name = name } }

// soapClient is a SOAP client of the vCenter at u that trusts what cfg
// says: its CA file, known-hosts file or thumbprint (each file checked
// first: a regular file of a sane size).
func soapClient(u *url.URL, cfg Config) (*soap.Client, error) {
	sc := soap.NewClient(u, cfg.Insecure)
	for _, file := range []string{cfg.CAFile, cfg.KnownHostsFile} {
		if file == "" {
			continue
		}
		if err := regularfile.Check(file, regularfile.Small); err != nil {
			return nil, err
		}
	}
	if cfg.CAFile != "" {
		if err := sc.SetRootCAs(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("vCenter CA file %s: %w", cfg.CAFile, err)
		}
	}
	if cfg.KnownHostsFile != "" {
		if err := sc.LoadThumbprints(cfg.KnownHostsFile); err != nil {
			return nil, fmt.Errorf("vCenter known-hosts file %s: %w", cfg.KnownHostsFile, err)
		}
	}
	if cfg.Thumbprint != "" {
		sc.SetThumbprint(u.Host, cfg.Thumbprint)
	}
	return sc, nil
}

// New connects to the vCenter in cfg, verifies its certificate unless
// cfg.Insecure, logs in and selects the datacenter.
func New(ctx context.Context, cfg Config, opts ...Option) (*Provider, error) {
	u, err := cfg.Endpoint()
	if err != nil {
		return nil, err
	}
	user, pass, err := cfg.credentials()
	if err != nil {
		return nil, err
	}
	p := &Provider{name: Name, endpoint: u, cfg: cfg, log: logr.Discard()}
	for _, o := range opts {
		o(p)
	}
	sc, err := soapClient(u, cfg)
	if err != nil {
		return nil, err
	}
	// The certificate's thumbprint is recorded whichever way it was
	// trusted, and a thumbprint given must match even when a CA already
	// verifies the certificate. One trusted by thumbprint alone skips
	// this callback (govmomi dials again without it) and is the one given.
	p.serverThumbprint.Store(&cfg.Thumbprint)
	sc.DefaultTransport().TLSClientConfig.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return nil
		}
		leaf := cs.PeerCertificates[0]
		got := soap.ThumbprintSHA256(leaf)
		if want := strings.ToUpper(cfg.Thumbprint); want != "" && want != got && want != soap.ThumbprintSHA1(leaf) {
			return &ThumbprintError{Host: u.Host, Presented: got, Want: cfg.Thumbprint}
		}
		p.serverThumbprint.Store(&got)
		return nil
	}
	vc, err := vim25.NewClient(ctx, sc)
	if err != nil {
		return nil, connectError(u, err)
	}
	vc.RoundTripper = keepalive.NewHandlerSOAP(vc.RoundTripper, keepAliveIdle, nil)
	if p.readOnly {
		vc.RoundTripper = readOnlyTransport{next: vc.RoundTripper}
	}
	vc.RoundTripper = &reloginTransport{next: vc.RoundTripper, login: func(ctx context.Context) error {
		return p.sessions.Login(ctx, url.UserPassword(user, pass))
	}}
	p.client = vc
	p.sessions = session.NewManager(vc)
	if err := p.sessions.Login(ctx, url.UserPassword(user, pass)); err != nil {
		// The error from vCenter does not hold the password; say who failed.
		return nil, fmt.Errorf("log in to vCenter %s as %q: %w", u.Host, user, describe(err))
	}
	p.finder = find.NewFinder(vc, true)
	if cfg.Datacenter != "" {
		p.dc, err = p.finder.Datacenter(ctx, cfg.Datacenter)
	} else {
		p.dc, err = p.finder.DefaultDatacenter(ctx)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("select datacenter on %s (set GOVC_DATACENTER or --vcenter-datacenter when there are several): %w", u.Host, err), p.Close(ctx))
	}
	p.finder.SetDatacenter(p.dc)
	if cfg.Insecure {
		p.log.Info("WARNING: TLS verification of vCenter is off (--vcenter-insecure / GOVC_INSECURE); use a CA file or thumbprint in production", "vcenter", u.Host)
	}
	return p, nil
}

// connectError explains a failed first contact, TLS failures above all.
func connectError(u *url.URL, err error) error {
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	msg := fmt.Sprintf("connect to vCenter %s", u)
	switch {
	case errors.As(err, &unknownAuthority), errors.As(err, &hostname), strings.Contains(err.Error(), "x509:"), strings.Contains(err.Error(), "thumbprint"):
		return fmt.Errorf("%s: TLS verification failed: %w; trust it with --vcenter-ca-file (GOVC_TLS_CA_CERTS) or --vcenter-thumbprint (GOVC_TLS_KNOWN_HOSTS), or pass --vcenter-insecure to skip verification", msg, err)
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// Name is the provider's name.
func (p *Provider) Name() string { return p.name }

// Client is the underlying vim25 client, for callers that need more.
func (p *Provider) Client() *vim25.Client { return p.client }

// Ref implements providers.Describer: the Record of how to reach this
// vCenter again, without credentials (recover reads them from the
// environment again).
func (p *Provider) Ref() providers.ProviderRef { return p.Record().Ref() }

// Record is how this provider reaches its vCenter.
func (p *Provider) Record() Record {
	r := Record{URL: p.endpoint.String(), Datacenter: p.dc.Name(), Insecure: p.cfg.Insecure, CAFile: p.cfg.CAFile, KnownHostsFile: p.cfg.KnownHostsFile, Thumbprint: p.cfg.Thumbprint}
	if tp := p.serverThumbprint.Load(); tp != nil {
		r.ServerThumbprint = *tp
	}
	return r
}

// Close logs out.
func (p *Provider) Close(ctx context.Context) error {
	if p.sessions == nil {
		return nil
	}
	if err := p.sessions.Logout(ctx); err != nil {
		return fmt.Errorf("log out of vCenter %s: %w", p.endpoint.Host, err)
	}
	return nil
}

// Resolve finds VMs by inventory name or glob, BIOS UUID, or CAPI
// providerID. Selectors that need a management cluster are unsupported.
func (p *Provider) Resolve(ctx context.Context, sel providers.Selector) ([]providers.Object, error) {
	if sel.Role != "" || sel.Cluster != "" || sel.MachineDeployment != "" || sel.ControlPlane != "" || sel.NodeName != "" || len(sel.NodeLabels) > 0 {
		return nil, fmt.Errorf("select by role, cluster, machineDeployment, controlPlane or node needs a management cluster; the vsphere provider selects by vm, uuid, providerID or host: %w", providers.ErrUnsupported)
	}
	uuid := sel.UUID
	if sel.ProviderID != "" {
		id, err := UUIDFromProviderID(sel.ProviderID)
		if err != nil {
			return nil, err
		}
		if uuid != "" && !strings.EqualFold(uuid, id) {
			return nil, nil // both set and disagreeing: nothing matches
		}
		uuid = id
	}
	var refs []types.ManagedObjectReference
	switch {
	case sel.VM != "":
		vms, err := p.finder.VirtualMachineList(ctx, sel.VM)
		var nf *find.NotFoundError
		if errors.As(err, &nf) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("find vm %q: %w", sel.VM, describe(err))
		}
		for _, vm := range vms {
			refs = append(refs, vm.Reference())
		}
	case uuid != "":
		ref, err := p.findByUUID(ctx, uuid)
		if err != nil {
			return nil, err
		}
		if ref != nil {
			refs = append(refs, *ref)
		}
	}
	if sel.Host != "" {
		on, err := p.vmsOnHost(ctx, sel.Host)
		if err != nil {
			return nil, err
		}
		if sel.VM == "" && uuid == "" {
			refs = on
		} else {
			refs = slices.DeleteFunc(refs, func(r types.ManagedObjectReference) bool { return !slices.Contains(on, r) })
		}
	}
	objs, err := p.objects(ctx, refs)
	if err != nil {
		return nil, err
	}
	if uuid != "" && sel.VM != "" {
		objs = filterUUID(objs, uuid)
	}
	return objs, nil
}

// vmsOnHost are the VMs on the ESXi host named name; none when there is no
// such host.
func (p *Provider) vmsOnHost(ctx context.Context, name string) ([]types.ManagedObjectReference, error) {
	h, err := p.finder.HostSystem(ctx, name)
	var nf *find.NotFoundError
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find host %q: %w", name, describe(err))
	}
	vms, err := p.vmsAt(ctx, h.Reference())
	if err != nil {
		return nil, fmt.Errorf("vms on host %q: %w", name, err)
	}
	refs := make([]types.ManagedObjectReference, len(vms))
	for i, vm := range vms {
		refs[i] = vm.Self
	}
	return refs, nil
}

func (p *Provider) findByUUID(ctx context.Context, uuid string) (*types.ManagedObjectReference, error) {
	vmSearch := true
	instanceUUID := false
	ref, err := object.NewSearchIndex(p.client).FindByUuid(ctx, p.dc, uuid, vmSearch, &instanceUUID)
	if err != nil {
		return nil, fmt.Errorf("find vm by BIOS UUID %s: %w", uuid, describe(err))
	}
	if ref == nil {
		return nil, nil
	}
	r := ref.Reference()
	return &r, nil
}

// objects reads the name and BIOS UUID of each VM, sorted by name.
func (p *Provider) objects(ctx context.Context, refs []types.ManagedObjectReference) ([]providers.Object, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	var vms []mo.VirtualMachine
	if err := property.DefaultCollector(p.client).Retrieve(ctx, refs, []string{"name", "config.uuid"}, &vms); err != nil {
		return nil, fmt.Errorf("read vm properties: %w", describe(err))
	}
	out := make([]providers.Object, 0, len(vms))
	for _, vm := range vms {
		o := providers.Object{Kind: "VirtualMachine", Name: vm.Name, ID: vm.Self.Value, Attributes: map[providers.Attribute]string{}}
		if vm.Config != nil {
			o.Attributes[providers.AttrUUID] = vm.Config.Uuid
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func filterUUID(objs []providers.Object, uuid string) []providers.Object {
	var out []providers.Object
	for _, o := range objs {
		if strings.EqualFold(o.Attributes[providers.AttrUUID], uuid) {
			out = append(out, o)
		}
	}
	return out
}

// UUIDFromProviderID extracts the BIOS UUID from a CAPV providerID
// (vsphere://<uuid>).
func UUIDFromProviderID(id string) (string, error) {
	uuid, ok := strings.CutPrefix(id, "vsphere://")
	if !ok || uuid == "" {
		return "", fmt.Errorf("providerID %q: expected vsphere://<bios-uuid>", id)
	}
	return uuid, nil
}
