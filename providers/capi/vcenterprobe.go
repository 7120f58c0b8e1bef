package capi

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
)

// The exit codes of `faultline reach`, which the probe pod runs: apart
// from faultline's own (2 usage, 3 infrastructure).
const (
	ReachedAll  = 0
	ReachedNone = 5
	ReachedSome = 6
)

// labelProbe selects the probe pod, and the policy it runs under.
const labelProbe = "faultline.dev/probe"

// probeTimeout bounds one probe pod, from its creation to its exit.
const probeTimeout = 2 * time.Minute

// proveCut proves, before CAPV's policy exists, that a NetworkPolicy cuts
// the way from CAPV's node and namespace to eps: a probe pod beside
// CAPV's reaches every endpoint, then one under a policy equal to the
// cut reaches none. Either failing refuses the fault with what the probe
// saw.
func (p *Provider) proveCut(ctx context.Context, capv corev1.Pod, eps []endpoint) error {
	code, out, err := p.probe(ctx, capv, eps)
	if err != nil {
		return err
	}
	if code != ReachedAll {
		return fmt.Errorf("vcenter.unreachable: a probe pod beside CAPV's pod %s/%s cannot reach vCenter even before the cut, so no cut could be proven:\n%s: %w", capv.Namespace, capv.Name, out, providers.ErrUnsupported)
	}
	sel := metav1.LabelSelector{MatchLabels: map[string]string{labelProbe: "vcenter-reach"}}
	if err := p.c.Create(ctx, cutPolicy(capv.Namespace, cutName+"-probe", sel, eps)); err != nil {
		return fmt.Errorf("vcenter.unreachable: the probe's NetworkPolicy in %s: %w", capv.Namespace, err)
	}
	code, out, err = p.probe(ctx, capv, eps)
	if err != nil {
		return err
	}
	if code != ReachedNone {
		return fmt.Errorf("vcenter.unreachable: this cluster's network does not enforce NetworkPolicy here: a probe pod beside CAPV's pod %s/%s, under a policy that denies its egress to %s, still reached vCenter (or the cluster's DNS names another address for it):\n%s\nNothing was cut: %w", capv.Namespace, capv.Name, addresses(eps), out, providers.ErrUnsupported)
	}
	return nil
}

// addresses lists eps' addresses, as the policy denies them.
func addresses(eps []endpoint) string {
	var out []string
	for _, e := range eps {
		for _, ip := range e.ips {
			out = append(out, ip.String())
		}
	}
	return strings.Join(out, ", ")
}

// probe runs `faultline reach` on eps in a pod beside capv (its
// namespace, node and tolerations) and returns the exit code and what it
// printed; the pod is deleted after.
func (p *Provider) probe(ctx context.Context, capv corev1.Pod, eps []endpoint) (int32, string, error) {
	args := []string{"reach", "--timeout", "5s"}
	for _, e := range eps {
		args = append(args, e.String())
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: capv.Namespace, GenerateName: "faultline-vcenter-probe-",
			Labels: map[string]string{labelManagedBy: "faultline", labelCut: "true", labelProbe: "vcenter-reach"},
		},
		Spec: corev1.PodSpec{
			NodeName: capv.Spec.NodeName, Tolerations: capv.Spec.Tolerations,
			RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: ptr.To(false),
			ActiveDeadlineSeconds: ptr.To(int64(probeTimeout / time.Second)),
			// faultline writes in /tmp as it starts (envtest's port
			// records), and the root file system is read-only.
			Volumes:         []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "probe", Image: p.probeImage, Args: args, ImagePullPolicy: corev1.PullIfNotPresent,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				VolumeMounts:             []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	if err := p.c.Create(ctx, pod); err != nil {
		return 0, "", fmt.Errorf("vcenter.unreachable: create a probe pod in %s: %w", capv.Namespace, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = p.c.Delete(dctx, pod, client.GracePeriodSeconds(0))
	}()
	var done *corev1.ContainerStateTerminated
	err := wait.PollUntilContextTimeout(ctx, time.Second, probeTimeout, true, func(ctx context.Context) (bool, error) {
		if err := p.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err
		}
		for _, s := range pod.Status.ContainerStatuses {
			if s.State.Terminated != nil {
				done = s.State.Terminated
				return true, nil
			}
			if w := s.State.Waiting; w != nil && cannotStart[w.Reason] {
				return false, fmt.Errorf("image %s: %s: %s", p.probeImage, w.Reason, w.Message)
			}
		}
		return pod.Status.Phase == corev1.PodFailed, nil
	})
	if err == nil && done == nil {
		err = fmt.Errorf("the pod failed: %s %s", pod.Status.Reason, pod.Status.Message)
	}
	if err != nil {
		return 0, "", fmt.Errorf("vcenter.unreachable: probe pod %s/%s on node %s: %w", pod.Namespace, pod.Name, pod.Spec.NodeName, err)
	}
	return done.ExitCode, strings.TrimSpace(done.Message), nil
}

// cannotStart are the waiting reasons of a container that will not start
// without someone's help.
var cannotStart = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"ErrImageNeverPull": true, "CreateContainerConfigError": true, "CreateContainerError": true,
}

// letsThrough names the NetworkPolicy of pols, other than faultline's,
// that selects a pod with podLabels and allows its egress to ip:port; ""
// when none does. A peer by pod or namespace selector names pods, never
// an address outside the cluster, and a named port a pod's.
func letsThrough(pols []networkingv1.NetworkPolicy, podLabels map[string]string, ip net.IP, port int32) string {
	for _, pol := range pols {
		if pol.Labels[labelCut] == "true" || !hasEgress(pol.Spec) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.PodSelector)
		if err != nil || !sel.Matches(labels.Set(podLabels)) {
			continue
		}
		for _, r := range pol.Spec.Egress {
			if allowsPort(r.Ports, port) && allowsIP(r.To, ip) {
				return pol.Name
			}
		}
	}
	return ""
}

// hasEgress: the policy restricts egress (policyTypes says so, or, left
// out, it has egress rules).
func hasEgress(s networkingv1.NetworkPolicySpec) bool {
	if len(s.PolicyTypes) == 0 {
		return len(s.Egress) > 0
	}
	for _, t := range s.PolicyTypes {
		if t == networkingv1.PolicyTypeEgress {
			return true
		}
	}
	return false
}

func allowsPort(ports []networkingv1.NetworkPolicyPort, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		switch {
		case p.Port == nil:
			return true
		case p.Port.StrVal != "":
		case p.EndPort != nil:
			if port >= p.Port.IntVal && port <= *p.EndPort {
				return true
			}
		case p.Port.IntVal == port:
			return true
		}
	}
	return false
}

func allowsIP(peers []networkingv1.NetworkPolicyPeer, ip net.IP) bool {
	if len(peers) == 0 {
		return true
	}
	for _, peer := range peers {
		if peer.IPBlock == nil || !inBlock(peer.IPBlock.CIDR, ip) {
			continue
		}
		excepted := false
		for _, e := range peer.IPBlock.Except {
			excepted = excepted || inBlock(e, ip)
		}
		if !excepted {
			return true
		}
	}
	return false
}

func inBlock(cidr string, ip net.IP) bool {
	_, block, err := net.ParseCIDR(cidr)
	return err == nil && block.Contains(ip)
}
