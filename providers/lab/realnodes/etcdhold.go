package realnodes

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// A slow etcd member start (the fault etcd.slow-member-start) on a real
// node: kubeadm join writes the etcd static pod manifest once it has added
// the member as a learner; the kubelet runs the pod as soon as it sees
// the file. Holding the file back for the delay is what a slow image pull
// or disk does to the member: the Node has registered (kubelet-start comes
// first), and the learner has no name until its etcd starts.

// kubeadmJoinConfig is where CABPK writes kubeadm join's configuration.
const kubeadmJoinConfig = "/run/kubeadm/kubeadm-join-config.yaml"

// SetMemberStartDelay has the control planes that join from now on start
// their etcd member d after kubeadm writes its manifest (zero: at once).
// A hold already running ends at its own time.
func (r *Nodes) SetMemberStartDelay(d time.Duration) { r.memberStart.Store(int64(d)) }

// joinsControlPlane tells whether cc joins a control plane: its kubeadm
// join configuration has a controlPlane section.
func joinsControlPlane(cc *CloudConfig) bool {
	for _, f := range cc.WriteFiles {
		if f.Path != kubeadmJoinConfig {
			continue
		}
		b, err := f.Bytes()
		return err == nil && strings.Contains(string(b), "controlPlane:")
	}
	return false
}

// holdEtcd starts, in vm's container and detached from this process, what
// holds the etcd manifest back for d once kubeadm has written it: waited
// for at most 10 minutes (a join that never gets there holds nothing).
func (d *Driver) holdEtcd(ctx context.Context, vm string, hold time.Duration) error {
	const manifest, held = "/etc/kubernetes/manifests/etcd.yaml", "/etc/kubernetes/etcd.yaml.faultline-held"
	script := fmt.Sprintf(`i=0
while [ ! -e %[1]s ]; do i=$((i+1)); [ "$i" -gt 12000 ] && exit 0; sleep 0.05; done
mv %[1]s %[2]s
echo "faultline: etcd manifest held back for %[3]s (etcd.slow-member-start)" >> /var/log/cloud-init-output.log
sleep %[4]d
mv %[2]s %[1]s`, manifest, held, hold, int(hold.Round(time.Second)/time.Second))
	if _, err := d.cfg.Docker.Run(ctx, "exec", "-d", d.ContainerName(vm), "/bin/sh", "-c", script); err != nil {
		return fmt.Errorf("vm %s: hold its etcd manifest back: %w", vm, err)
	}
	return nil
}
