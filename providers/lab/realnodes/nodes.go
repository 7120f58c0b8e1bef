package realnodes

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	infrav1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/lab/vcsim"
)

// apiServerPort is the real nodes' API server port, behind the load
// balancer on the same port.
const apiServerPort = 6443

// Nodes runs the VMs of a cluster whose nodes are real: each VM's
// container follows its power state (containers.go), boots once from the
// bootstrap data CAPV put in its extraConfig, gets its address reported
// as the VM's guest IP, and, as the vSphere cloud provider would, its
// Node's providerID; the load balancer sends the control-plane endpoint
// to the control planes that run, and the cluster gets its CNI agent
// (realcni.go). Nothing of the node simulator runs for such a cluster.
type Nodes struct {
	driver  *Driver
	docker  kind.Docker
	vc      *vim25.Client
	setIP   func(types.ManagedObjectReference, string) error
	mc      client.Client
	cluster string
	cni     string // the CNI its agent's DaemonSet is named after
	// endpoint is the control-plane endpoint, host:port.
	endpoint string
	// workload reaches the cluster's API server, through the endpoint.
	workload func(ctx context.Context) (client.Client, error)
	log      logr.Logger

	// Owned by the ticking goroutine.
	vms      vcsim.VMView
	backends []string
	boots    sync.WaitGroup
	booted   map[string]bool // VMs whose cloud-config ran
	waiting  map[string]bool // VMs whose bootstrap data was not readable
	// cniInstalled: the CNI agent's objects were created.
	cniInstalled bool

	// memberStart is how long a joining control plane's etcd manifest is
	// held back (SetMemberStartDelay), a time.Duration.
	memberStart atomic.Int64
}

type realVM struct {
	ref      types.ManagedObjectReference
	uuid     string
	power    providers.PowerState
	bootTime time.Time
	ip       string
	guest    GuestInfo
}

// run ticks until ctx ends.
func (r *Nodes) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := r.tick(ctx); err != nil && ctx.Err() == nil {
			r.log.V(1).Info("real nodes tick", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			r.vms.Close(ctx)
			r.boots.Wait()
			return
		case <-t.C:
		}
	}
}

// inventory reads every VM's UUID, power state, boot time, IP and
// guestinfo in one call.
func (r *Nodes) inventory(ctx context.Context) (map[string]realVM, error) {
	vms, err := r.vms.Read(ctx, r.vc, "config.uuid", "config.extraConfig", "runtime.powerState", "summary.runtime.bootTime", "guest.ipAddress")
	if err != nil {
		return nil, err
	}
	out := make(map[string]realVM, len(vms))
	for _, vm := range vms {
		if vm.Config == nil {
			continue
		}
		st := realVM{ref: vm.Reference(), uuid: vm.Config.Uuid, power: providers.PowerState(vm.Runtime.PowerState), guest: GuestInfo{}}
		if vm.Guest != nil {
			st.ip = vm.Guest.IpAddress
		}
		if bt := vm.Summary.Runtime.BootTime; bt != nil {
			st.bootTime = *bt
		}
		for _, o := range vm.Config.ExtraConfig {
			if kv := o.GetOptionValue(); kv != nil && strings.HasPrefix(kv.Key, "guestinfo.") {
				st.guest[kv.Key] = fmt.Sprint(kv.Value)
			}
		}
		out[vm.Config.Uuid] = st
	}
	return out, nil
}

func (r *Nodes) tick(ctx context.Context) error {
	inv, err := r.inventory(ctx)
	if err != nil {
		return err
	}
	var vsvms infrav1.VSphereVMList
	if err := r.mc.List(ctx, &vsvms, client.InNamespace(labconfig.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: r.cluster}); err != nil {
		return fmt.Errorf("list VSphereVMs: %w", err)
	}
	var machines clusterv1.MachineList
	if err := r.mc.List(ctx, &machines, client.InNamespace(labconfig.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: r.cluster}); err != nil {
		return fmt.Errorf("list Machines: %w", err)
	}
	controlPlane := map[string]bool{} // by VSphereMachine (and VSphereVM) name
	dataSecret, version := map[string]string{}, map[string]string{}
	for _, m := range machines.Items {
		version[m.Spec.InfrastructureRef.Name] = m.Spec.Version
		if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; ok {
			controlPlane[m.Spec.InfrastructureRef.Name] = true
		}
		if m.Spec.Bootstrap.DataSecretName != nil {
			dataSecret[m.Spec.InfrastructureRef.Name] = *m.Spec.Bootstrap.DataSecretName
		}
	}
	var errs []error
	var backends []string
	seen := map[string]bool{}
	for _, v := range vsvms.Items {
		if v.Spec.BiosUUID == "" {
			continue // not cloned yet
		}
		seen[v.Name] = true
		st, exists := inv[v.Spec.BiosUUID]
		ip, err := r.driver.Reconcile(ctx, VM{Name: v.Name, Exists: exists, Power: st.power, BootTime: st.bootTime, Version: version[v.Name]})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !exists || st.power != providers.PoweredOn || ip == "" {
			continue
		}
		if st.ip != ip {
			errs = append(errs, r.setIP(st.ref, ip))
		}
		if _, ok := st.guest["guestinfo.userdata"]; !ok && dataSecret[v.Name] != "" {
			// vcsim does not keep the extraConfig of a clone spec, where
			// CAPV puts the userdata (it keeps the metadata CAPV sets
			// afterwards): read it where CAPV read it, the Machine's
			// bootstrap data Secret.
			if err := r.userDataFromSecret(ctx, dataSecret[v.Name], st.guest); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		r.boot(ctx, v.Name, st)
		if controlPlane[v.Name] {
			backends = append(backends, net.JoinHostPort(ip, fmt.Sprint(apiServerPort)))
		}
	}
	for _, name := range r.driver.VMs() {
		if !seen[name] {
			// Its VSphereVM is gone: so is the VM.
			_, err := r.driver.Reconcile(ctx, VM{Name: name})
			errs = append(errs, err)
		}
	}
	sort.Strings(backends)
	if strings.Join(backends, ",") != strings.Join(r.backends, ",") {
		if err := r.driver.SetBackends(ctx, backends); err != nil {
			errs = append(errs, err)
		} else {
			r.backends = backends
		}
	}
	if len(backends) > 0 {
		errs = append(errs, r.podNetwork(ctx))
	}
	return errors.Join(errs...)
}

// boot runs a VM's cloud-config once, at its first power-on, in the
// background (kubeadm takes its time), as cloud-init does. The kubelet
// gets the VM's providerID first, as the vSphere cloud provider would set
// it.
func (r *Nodes) boot(ctx context.Context, vm string, st realVM) {
	if r.booted[vm] {
		return
	}
	cc, _, err := ParseCloudConfig(st.guest)
	if err != nil {
		// CAPV may still be writing the bootstrap data: the next tick
		// tries again, as cloud-init waits for its datasource. Said once
		// a VM at level 0, then at 1.
		level := 1
		if !r.waiting[vm] {
			r.waiting[vm], level = true, 0
		}
		r.log.V(level).Info("vm bootstrap data not readable yet", "vm", vm, "error", err.Error())
		return
	}
	r.booted[vm] = true
	r.log.Info("vm bootstrap started", "vm", vm, "ip", st.ip, "providerID", "vsphere://"+st.uuid)
	r.boots.Add(1)
	go func() {
		defer r.boots.Done()
		started := time.Now()
		kubelet, err := r.kubeletArgs(ctx, vm, "--provider-id=vsphere://"+st.uuid)
		if err != nil {
			r.log.Error(err, "vm bootstrap", "vm", vm)
			return
		}
		cc.WriteFiles = append([]WriteFile{kubelet}, cc.WriteFiles...)
		if err := containerKubeProxy(cc); err != nil {
			r.log.Error(err, "vm bootstrap", "vm", vm)
			return
		}
		if hold := time.Duration(r.memberStart.Load()); hold > 0 && joinsControlPlane(cc) {
			if err := r.driver.holdEtcd(ctx, vm, hold); err != nil {
				r.log.Error(err, "vm bootstrap", "vm", vm)
				return
			}
		}
		if err := r.driver.Boot(ctx, vm, cc); err != nil {
			r.log.Error(err, "vm bootstrap", "vm", vm)
			return
		}
		r.log.Info("vm bootstrapped", "vm", vm, "took", time.Since(started).Round(time.Millisecond).String())
	}()
}

// kubeadmInitConfig is where CABPK writes kubeadm init's configuration.
const kubeadmInitConfig = "/run/kubeadm/kubeadm.yaml"

// kubeProxyInContainer is the KubeProxyConfiguration a node in a container
// needs, as Cluster API's docker provider appends it to kubeadm init's
// configuration: kube-proxy must not set nf_conntrack_max, a global sysctl
// a container may not write (kube-proxy exits on the permission error).
const kubeProxyInContainer = `
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
conntrack:
  maxPerCore: 0
`

// containerKubeProxy adds kubeProxyInContainer to kubeadm init's
// configuration in cc, if cc has one.
func containerKubeProxy(cc *CloudConfig) error {
	for i, f := range cc.WriteFiles {
		if f.Path != kubeadmInitConfig {
			continue
		}
		b, err := f.Bytes()
		if err != nil {
			return err
		}
		cc.WriteFiles[i].Content, cc.WriteFiles[i].Encoding = strings.TrimRight(string(b), "\n")+"\n"+kubeProxyInContainer, ""
	}
	return nil
}

// userDataFromSecret puts the bootstrap data Secret's value in guest as
// CAPV would have: base64, with its encoding.
func (r *Nodes) userDataFromSecret(ctx context.Context, name string, guest GuestInfo) error {
	sec := &corev1.Secret{}
	if err := r.mc.Get(ctx, client.ObjectKey{Namespace: labconfig.Namespace, Name: name}, sec); err != nil {
		return fmt.Errorf("bootstrap data Secret %s: %w", name, err)
	}
	guest["guestinfo.userdata"] = base64.StdEncoding.EncodeToString(sec.Data["value"])
	guest["guestinfo.userdata.encoding"] = "base64"
	return nil
}

// kubeletDefaults is where the kubelet's extra flags are, beside the ones
// kubeadm writes: the node image's, which must be kept.
const kubeletDefaults = "/etc/default/kubelet"

// kubeletArgs is the node's kubeletDefaults with flag added to
// KUBELET_EXTRA_ARGS.
func (r *Nodes) kubeletArgs(ctx context.Context, vm, flag string) (WriteFile, error) {
	out, err := r.docker.Run(ctx, "exec", r.driver.ContainerName(vm), "cat", kubeletDefaults)
	var de *kind.DockerError
	if err != nil && !errors.As(err, &de) {
		return WriteFile{}, err
	}
	var lines []string
	found := false
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if rest, ok := strings.CutPrefix(l, "KUBELET_EXTRA_ARGS="); ok {
			l, found = "KUBELET_EXTRA_ARGS="+strings.TrimSpace(strings.Trim(rest, `"`)+" "+flag), true
		}
		if l != "" {
			lines = append(lines, l)
		}
	}
	if !found {
		lines = append(lines, "KUBELET_EXTRA_ARGS="+flag)
	}
	return WriteFile{Path: kubeletDefaults, Permissions: "0644", Content: strings.Join(lines, "\n") + "\n"}, nil
}

// podNetwork installs the cluster's CNI agent once its API server answers;
// the agent configures every node's pod network from then on.
func (r *Nodes) podNetwork(ctx context.Context) error {
	if r.cniInstalled {
		return nil
	}
	c, err := r.workload(ctx)
	if err != nil {
		return err
	}
	if err := ensureCNIAgent(ctx, c, r.cni, r.endpoint); err != nil {
		return err
	}
	r.cniInstalled = true
	return nil
}

// stateFile is where a lab records its real nodes' containers and
// network, in the lab's folder.
func stateFile(dir string) string { return filepath.Join(dir, "vmcontainers.json") }

// Remove removes the containers and the network of the real nodes of the
// lab whose folder is dir, as its state file records them: what a lab
// that crashed left. A lab without real nodes has nothing to remove.
func Remove(ctx context.Context, dir string) error {
	return Cleanup(ctx, nil, stateFile(dir))
}
