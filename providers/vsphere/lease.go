package vsphere

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline-dev/faultline/providers"
)

var _ providers.SharedLeases = (*Provider)(nil)

// LeaseField is the custom attribute of VirtualMachines in which a run
// records its lease on the VM, seen by every runner that reaches the
// vCenter (vSphere's UI shows it too).
const LeaseField = "faultline.lease"

// leaseSettle is how long a runner waits after writing its lease before
// reading it back. vCenter has no compare-and-swap, so a lease is taken
// as in Fischer's mutual exclusion: read (free or expired), write, wait
// longer than any runner takes between its read and its write (one SOAP
// call), read again; the runner whose value is still there holds it, the
// others see it held. A runner that reads after that wait sees the lease.
const leaseSettle = time.Second

// vmLease is the value of LeaseField.
type vmLease struct {
	Holder  string    `json:"holder"`
	Renewed time.Time `json:"renewed"`
	// Seconds is how long the lease holds past Renewed.
	Seconds int `json:"seconds"`
}

func (l vmLease) expired(now time.Time) bool {
	return now.After(l.Renewed.Add(time.Duration(l.Seconds) * time.Second))
}

// AcquireLease implements providers.SharedLeases with the VM's custom
// attribute LeaseField: a runner on another host against the same vCenter
// sees it before it faults the VM. The holder renews it every third of its
// duration; a runner killed stops renewing, and once the duration has
// passed another may take it over. A read-only session leases nothing (a
// dry run faults nothing).
func (p *Provider) AcquireLease(ctx context.Context, obj providers.Object, holder string, duration time.Duration) (func(context.Context) error, error) {
	if obj.Kind != "VirtualMachine" {
		return nil, fmt.Errorf("lease of %s: not a VM: %w", obj, providers.ErrUnsupported)
	}
	if p.readOnly {
		return nil, fmt.Errorf("lease of %s: %w", obj, ErrReadOnly)
	}
	key, err := p.leaseField(ctx)
	if err != nil {
		return nil, err
	}
	mine := vmLease{Holder: holder, Seconds: int(max(time.Second, duration) / time.Second)}
	if err := p.takeVMLease(ctx, obj, key, &mine); err != nil {
		return nil, err
	}
	return providers.RenewUntilReleased(ctx,
		func(ctx context.Context) { p.renewVMLease(ctx, obj, key, mine, duration/3) },
		func(ctx context.Context) error { return p.releaseVMLease(ctx, obj, key, holder) }), nil
}

// leaseField is the key of LeaseField, defined on VirtualMachines the first
// time (Global.ManageCustomFields); a definition another runner made at
// the same time is used.
func (p *Provider) leaseField(ctx context.Context) (int32, error) {
	m, err := object.GetCustomFieldsManager(p.client)
	if err != nil {
		return 0, fmt.Errorf("vCenter custom attributes: %w", err)
	}
	key, err := m.FindKey(ctx, LeaseField)
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, object.ErrKeyNameNotFound) {
		return 0, fmt.Errorf("vCenter custom attribute %s: %w", LeaseField, err)
	}
	def, err := m.Add(ctx, LeaseField, "VirtualMachine", nil, nil)
	if err == nil {
		return def.Key, nil
	}
	if key, ferr := m.FindKey(ctx, LeaseField); ferr == nil {
		return key, nil // another runner defined it meanwhile
	}
	return 0, fmt.Errorf("define the vCenter custom attribute %s on VirtualMachines (needs Global.ManageCustomFields): %w", LeaseField, err)
}

// readVMLease is the lease the VM's attribute records; ok is false when
// it records none (or what no faultline wrote).
func (p *Provider) readVMLease(ctx context.Context, obj providers.Object, key int32) (vmLease, bool, error) {
	var vm mo.VirtualMachine
	if err := p.vm(obj).Properties(ctx, p.vm(obj).Reference(), []string{"customValue"}, &vm); err != nil {
		return vmLease{}, false, fmt.Errorf("read the lease of %s: %w", obj, describe(err))
	}
	for _, v := range vm.CustomValue {
		if s, ok := v.(*types.CustomFieldStringValue); ok && s.Key == key && s.Value != "" {
			var l vmLease
			if err := json.Unmarshal([]byte(s.Value), &l); err != nil || l.Holder == "" {
				return vmLease{}, false, nil
			}
			return l, true, nil
		}
	}
	return vmLease{}, false, nil
}

// writeVMLease records l on the VM (Global.SetCustomField); an empty
// holder clears it.
func (p *Provider) writeVMLease(ctx context.Context, obj providers.Object, key int32, l vmLease) error {
	value := ""
	if l.Holder != "" {
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		value = string(b)
	}
	m, err := object.GetCustomFieldsManager(p.client)
	if err == nil {
		err = m.Set(ctx, p.vm(obj).Reference(), key, value)
	}
	if err != nil {
		return fmt.Errorf("write the lease of %s (needs Global.SetCustomField): %w", obj, describe(err))
	}
	return nil
}

// takeVMLease takes the VM's lease for mine (its Renewed set here): free,
// expired, already mine, or of a run of this host whose process is gone
// (providers.HolderGone); one another holder renewed within its duration,
// or wrote in the settle window, is providers.ErrLeaseHeld naming it.
func (p *Provider) takeVMLease(ctx context.Context, obj providers.Object, key int32, mine *vmLease) error {
	held := func(l vmLease) error {
		return fmt.Errorf("%w: %s is leased to %s, renewed %s, for %ds (its vCenter custom attribute %s)",
			providers.ErrLeaseHeld, obj, l.Holder, l.Renewed.UTC().Format(time.RFC3339), l.Seconds, LeaseField)
	}
	cur, ok, err := p.readVMLease(ctx, obj, key)
	if err != nil {
		return err
	}
	if ok && cur.Holder != mine.Holder && !cur.expired(time.Now()) && !providers.HolderGone(cur.Holder) {
		return held(cur)
	}
	mine.Renewed = time.Now()
	if err := p.writeVMLease(ctx, obj, key, *mine); err != nil {
		return err
	}
	t := time.NewTimer(leaseSettle)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return errors.Join(ctx.Err(), p.releaseVMLease(context.WithoutCancel(ctx), obj, key, mine.Holder))
	case <-t.C:
	}
	cur, ok, err = p.readVMLease(ctx, obj, key)
	if err != nil {
		return err
	}
	if !ok || cur.Holder != mine.Holder {
		return held(cur)
	}
	return nil
}

// renewVMLease rewrites the lease every period until ctx ends, unless
// another holder took it over (after this runner failed to renew it
// within its duration).
func (p *Provider) renewVMLease(ctx context.Context, obj providers.Object, key int32, mine vmLease, period time.Duration) {
	t := time.NewTicker(max(period, time.Second))
	defer t.Stop()
	log := p.log.WithValues("vm", obj.Name)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur, ok, err := p.readVMLease(ctx, obj, key)
		switch {
		case isFault(err, "ManagedObjectNotFound"):
			return // the VM is gone (destroyed by the fault), and its lease with it
		case err != nil:
			log.Error(err, "renewing the VM's lease")
			continue
		case ok && cur.Holder != mine.Holder:
			log.Error(providers.ErrLeaseHeld, "the VM's lease was taken over", "holder", cur.Holder)
			return
		}
		mine.Renewed = time.Now()
		if err := p.writeVMLease(ctx, obj, key, mine); err != nil {
			log.Error(err, "renewing the VM's lease")
		}
	}
}

// releaseVMLease clears the VM's lease if holder still has it.
func (p *Provider) releaseVMLease(ctx context.Context, obj providers.Object, key int32, holder string) error {
	cur, ok, err := p.readVMLease(ctx, obj, key)
	if isFault(err, "ManagedObjectNotFound") {
		return nil // the VM is gone, and its lease with it
	}
	if err != nil || !ok || cur.Holder != holder {
		return err
	}
	return p.writeVMLease(ctx, obj, key, vmLease{})
}
