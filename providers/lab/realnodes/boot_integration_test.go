package realnodes_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/lab/realnodes"
)

// initUserData is a control plane's bootstrap data in CABPK's shape
// (controlplane_init.go), with what a node in a container needs in its
// kubeadm configuration (kind's settings): %[1]s the node's address,
// %[2]s its VM's UUID, %[3]s the Kubernetes version, %[4]s the kubelet's
// cgroup v1 setting, %[5]s the control-plane endpoint's address.
const initUserData = `## template: jinja
#cloud-config
write_files:
-   path: /run/kubeadm/kubeadm.yaml
    owner: root:root
    permissions: '0640'
    content: |
      ---
      apiVersion: kubeadm.k8s.io/v1beta4
      kind: ClusterConfiguration
      kubernetesVersion: %[3]s
      controlPlaneEndpoint: "%[5]s:6443"
      networking: {podSubnet: 192.168.0.0/16, serviceSubnet: 10.128.0.0/12}
      ---
      apiVersion: kubeadm.k8s.io/v1beta4
      kind: InitConfiguration
      skipPhases: [preflight]
      localAPIEndpoint: {advertiseAddress: "%[1]s"}
      nodeRegistration:
        name: '{{ local_hostname }}'
        criSocket: unix:///run/containerd/containerd.sock
        kubeletExtraArgs:
          - {name: node-ip, value: "%[1]s"}
          - {name: provider-id, value: "vsphere://%[2]s"}
      ---
      apiVersion: kubelet.config.k8s.io/v1beta1
      kind: KubeletConfiguration
      cgroupDriver: systemd
      cgroupRoot: /kubelet
      failSwapOn: false
      imageGCHighThresholdPercent: 100
      evictionHard: {nodefs.available: "0%%", nodefs.inodesFree: "0%%", imagefs.available: "0%%"}
      %[4]s
-   path: /run/cluster-api/placeholder
    owner: root:root
    permissions: '0640'
    content: "This placeholder file is used to create the /run/cluster-api sub directory"
runcmd:
  - 'kubeadm init --config /run/kubeadm/kubeadm.yaml  && echo success > /run/cluster-api/bootstrap-success.complete'
`

// A VM's container boots from its guestinfo as cloud-init would: the real
// kubeadm init of CABPK's runcmd brings up a control plane behind the
// lab's load balancer, whose Node has the VM's providerID, and writes
// CABPK's sentinel. The load balancer follows its backends.
func TestIntegrationBootKubeadmInit(t *testing.T) {
	image, quirks := requireNodeImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	docker := kind.ExecDocker{}
	simulator.Test(func(_ context.Context, c *vim25.Client) {
		d, vm, _ := newDriver(ctx, t, c, "fl-boot", image, quirks)
		var m mo.VirtualMachine
		if err := vm.Properties(ctx, vm.Reference(), []string{"config.uuid"}, &m); err != nil {
			t.Fatal(err)
		}
		lb, err := d.StartLoadBalancer(ctx, 6443)
		if err != nil {
			t.Fatal(err)
		}
		ip, err := d.Reconcile(ctx, read(ctx, t, vm))
		if err != nil {
			t.Fatal(err)
		}
		cgroup := ""
		if quirks.CgroupV1 {
			cgroup = "failCgroupV1: false"
		}
		version := strings.SplitN(strings.SplitN(image, ":", 2)[1], "-", 2)[0]
		user := fmt.Sprintf(initUserData, ip, m.Config.Uuid, version, cgroup, lb)
		meta := "instance-id: \"lab-cp-0\"\nlocal-hostname: \"lab-cp-0\"\n"
		cc, _, err := realnodes.ParseCloudConfig(realnodes.GuestInfo{
			"guestinfo.userdata": base64.StdEncoding.EncodeToString([]byte(user)), "guestinfo.userdata.encoding": "base64",
			"guestinfo.metadata": base64.StdEncoding.EncodeToString([]byte(meta)), "guestinfo.metadata.encoding": "base64",
		})
		if err != nil {
			t.Fatal(err)
		}
		started := time.Now()
		// kubeadm init waits for the API server through the endpoint.
		if err := d.SetBackends(ctx, []string{ip + ":6443"}); err != nil {
			t.Fatal(err)
		}
		if err := d.Boot(ctx, vm.Name(), cc); err != nil {
			t.Fatal(err)
		}
		t.Logf("kubeadm init done in %s", time.Since(started).Round(time.Second))
		name := d.ContainerName(vm.Name())
		out, err := docker.Run(ctx, "exec", name, "cat", "/run/cluster-api/bootstrap-success.complete")
		if err != nil || strings.TrimSpace(string(out)) != "success" {
			t.Fatalf("CABPK's sentinel: %q, %v", out, err)
		}
		out, err = docker.Run(ctx, "exec", name, "kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf", "get", "node", "lab-cp-0", "--output", "jsonpath={.spec.providerID}")
		if err != nil || string(out) != "vsphere://"+m.Config.Uuid {
			t.Fatalf("the Node's providerID: %q, %v; want vsphere://%s", out, err, m.Config.Uuid)
		}
		// admin.conf reaches the API server through the load balancer:
		// without a backend it answers nothing, with one again it does.
		reachable := func() bool {
			_, err := docker.Run(ctx, "exec", name, "kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf", "--request-timeout", "2s", "get", "--raw", "/healthz")
			return err == nil
		}
		for _, st := range []struct {
			backends []string
			want     bool
		}{{nil, false}, {[]string{ip + ":6443"}, true}} {
			if err := d.SetBackends(ctx, st.backends); err != nil {
				t.Fatal(err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				return reachable() == st.want, nil
			}); err != nil {
				t.Fatalf("with backends %v the API server through %s: reachable %t after 30s", st.backends, lb, !st.want)
			}
		}
	})
}
