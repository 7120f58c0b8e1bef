package fake

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/providers"
)

var (
	_ providers.Provider    = (*Provider)(nil)
	_ providers.VMPower     = (*Provider)(nil)
	_ providers.VMLifecycle = (*Provider)(nil)
	_ providers.VMNetwork   = (*Provider)(nil)
	_ providers.Watcher     = (*Provider)(nil)
)

// VM is one fake VM.
type VM struct {
	Name         string
	State        providers.PowerState
	NICConnected bool
	// Attributes are copied into the VM's Object on Resolve.
	Attributes map[providers.Attribute]string
	gone       bool
}

// Call is one recorded call.
type Call struct {
	Method string
	VM     string
}

// Provider is the fake.
type Provider struct {
	mu       sync.Mutex
	vms      map[string]*VM
	calls    []Call
	failures map[Call]error
	delays   map[string]time.Duration
	watchers []chan struct{}
	objects  map[string]map[string]any
}

// New returns a fake with the named VMs, powered on with NICs connected.
func New(names ...string) *Provider {
	p := &Provider{vms: map[string]*VM{}, failures: map[Call]error{}, delays: map[string]time.Duration{}}
	for _, n := range names {
		p.vms[n] = &VM{Name: n, State: providers.PoweredOn, NICConnected: true}
	}
	return p
}

// SetAttributes sets the attributes Resolve reports for a VM (an etcd
// member's, say).
func (p *Provider) SetAttributes(vm string, attrs map[providers.Attribute]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.vms[vm].Attributes = attrs
}

// Name is "fake".
func (p *Provider) Name() string { return "fake" }

// FailOn makes method on vm (or on every VM when vm is "") return err.
func (p *Provider) FailOn(method, vm string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures[Call{method, vm}] = err
}

// Delay makes method's effect land d after the call returns.
func (p *Provider) Delay(method string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delays[method] = d
}

// Calls returns the calls so far.
func (p *Provider) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.calls...)
}

// VM returns a copy of a VM's state.
func (p *Provider) VM(name string) VM {
	p.mu.Lock()
	defer p.mu.Unlock()
	if vm, ok := p.vms[name]; ok {
		return *vm
	}
	return VM{Name: name, gone: true}
}

// Set changes a VM's power state, as something outside faultline would
// (a controller powering it back on), and notifies watchers.
func (p *Provider) Set(name string, state providers.PowerState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if vm, ok := p.vms[name]; ok {
		vm.State = state
	} else {
		p.vms[name] = &VM{Name: name, State: state, NICConnected: true}
	}
	p.notifyLocked()
}

// Resolve matches VMs by name glob; other selectors are unsupported.
func (p *Provider) Resolve(_ context.Context, sel providers.Selector) ([]providers.Object, error) {
	if sel.VM == "" {
		return nil, fmt.Errorf("fake selects by vm only: %w", providers.ErrUnsupported)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []providers.Object
	for name, vm := range p.vms {
		if ok, err := path.Match(sel.VM, name); err != nil {
			return nil, fmt.Errorf("vm pattern %q: %w", sel.VM, err)
		} else if ok && !vm.gone {
			out = append(out, providers.Object{Kind: "VirtualMachine", Name: name, ID: name, Attributes: maps.Clone(vm.Attributes)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// do records a call, returns an injected failure, or applies change now or
// after the method's delay.
func (p *Provider) do(ctx context.Context, method string, obj providers.Object, change func(*VM)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, Call{method, obj.Name})
	for _, key := range []Call{{method, obj.Name}, {method, ""}} {
		if err, ok := p.failures[key]; ok {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	vm, ok := p.vms[obj.Name]
	if !ok || vm.gone {
		return fmt.Errorf("vm %s: %w", obj.Name, providers.ErrNotFound)
	}
	if change == nil {
		return nil
	}
	if d := p.delays[method]; d > 0 {
		time.AfterFunc(d, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			change(vm)
			p.notifyLocked()
		})
		return nil
	}
	change(vm)
	p.notifyLocked()
	return nil
}

func setState(s providers.PowerState) func(*VM) { return func(vm *VM) { vm.State = s } }

// PowerOn implements providers.VMPower.
func (p *Provider) PowerOn(ctx context.Context, o providers.Object) error {
	return p.do(ctx, "PowerOn", o, setState(providers.PoweredOn))
}

// PowerOff implements providers.VMPower.
func (p *Provider) PowerOff(ctx context.Context, o providers.Object) error {
	return p.do(ctx, "PowerOff", o, setState(providers.PoweredOff))
}

// ShutdownGuest implements providers.VMPower.
func (p *Provider) ShutdownGuest(ctx context.Context, o providers.Object) error {
	return p.do(ctx, "ShutdownGuest", o, setState(providers.PoweredOff))
}

// Reset implements providers.VMPower.
func (p *Provider) Reset(ctx context.Context, o providers.Object) error {
	return p.do(ctx, "Reset", o, setState(providers.PoweredOn))
}

// Suspend implements providers.VMPower.
func (p *Provider) Suspend(ctx context.Context, o providers.Object) error {
	return p.do(ctx, "Suspend", o, setState(providers.Suspended))
}

// PowerState implements providers.VMPower.
func (p *Provider) PowerState(ctx context.Context, o providers.Object) (providers.PowerState, error) {
	var s providers.PowerState
	err := p.do(ctx, "PowerState", o, nil)
	if err == nil {
		s = p.VM(o.Name).State
	}
	return s, err
}

// Destroy implements providers.VMLifecycle.
func (p *Provider) Destroy(ctx context.Context, o providers.Object) error {
	return p.do(ctx, "Destroy", o, func(vm *VM) { vm.gone = true; vm.State = providers.PoweredOff })
}

// Exists implements providers.VMLifecycle.
func (p *Provider) Exists(ctx context.Context, o providers.Object) (bool, error) {
	p.mu.Lock()
	p.calls = append(p.calls, Call{"Exists", o.Name})
	vm, ok := p.vms[o.Name]
	p.mu.Unlock()
	return ok && !vm.gone, nil
}

// SetNICConnected implements providers.VMNetwork.
func (p *Provider) SetNICConnected(ctx context.Context, o providers.Object, _ string, connected bool) error {
	return p.do(ctx, "SetNICConnected", o, func(vm *VM) { vm.NICConnected = connected })
}

// NICConnected implements providers.VMNetwork.
func (p *Provider) NICConnected(ctx context.Context, o providers.Object, _ string) (bool, error) {
	err := p.do(ctx, "NICConnected", o, nil)
	return err == nil && p.VM(o.Name).NICConnected, err
}

// Watch implements providers.Watcher: it fires on every change.
func (p *Provider) Watch(ctx context.Context, _ providers.Object) (<-chan struct{}, error) {
	ch := make(chan struct{}, 1)
	p.mu.Lock()
	p.watchers = append(p.watchers, ch)
	p.mu.Unlock()
	go func() {
		<-ctx.Done()
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, w := range p.watchers {
			if w == ch {
				p.watchers = append(p.watchers[:i], p.watchers[i+1:]...)
				close(ch)
				break
			}
		}
	}()
	return ch, nil
}

func (p *Provider) notifyLocked() {
	for _, w := range p.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

var _ providers.Objects = (*Provider)(nil)

func objectKey(ref providers.ObjectRef) string {
	return ref.Cluster + "|" + ref.APIVersion + "|" + ref.Kind + "|" + ref.Namespace + "|" + ref.Name
}

// SetObject stores (or, with nil, removes) an object GetObject returns.
func (p *Provider) SetObject(ref providers.ObjectRef, obj map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objects == nil {
		p.objects = map[string]map[string]any{}
	}
	if obj == nil {
		delete(p.objects, objectKey(ref))
	} else {
		p.objects[objectKey(ref)] = obj
	}
	p.notifyLocked()
}

// GetObject implements providers.Objects.
func (p *Provider) GetObject(_ context.Context, _ providers.Object, ref providers.ObjectRef) (map[string]any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, Call{Method: "GetObject", VM: ref.Name})
	return p.objects[objectKey(ref)], nil
}

// ListObjects implements providers.Objects over the objects SetObject
// stored.
func (p *Provider) ListObjects(_ context.Context, _ providers.Object, ref providers.ObjectRef) ([]map[string]any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, Call{Method: "ListObjects", VM: ref.Kind})
	prefix := ref.Cluster + "|" + ref.APIVersion + "|" + ref.Kind + "|"
	if ref.Namespace != "" {
		prefix += ref.Namespace + "|"
	}
	var out []map[string]any
	for _, k := range slices.Sorted(maps.Keys(p.objects)) {
		if strings.HasPrefix(k, prefix) {
			out = append(out, p.objects[k])
		}
	}
	return out, nil
}
