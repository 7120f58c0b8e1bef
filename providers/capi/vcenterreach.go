package capi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
)

var _ providers.VCenterReach = (*Provider)(nil)

// capvLabel is the label CAPV's kustomization (config/default,
// commonLabels) puts on its manager's pods.
const capvLabel = "cluster.x-k8s.io/provider"

// The labels of what vcenter.unreachable creates, which its undo (and
// `faultline recover`) deletes: nothing else is.
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	labelCut       = "faultline.dev/vcenter-cut"
	cutName        = "faultline-vcenter-unreachable"
)

// cutPlan is what vcenter.unreachable cuts on a user's cluster: CAPV's
// pods, and the vCenter endpoints their objects name.
type cutPlan struct {
	pods      []corev1.Pod
	endpoints []endpoint
}

// endpoint is a vCenter server as CAPV's spec.server names it, with the
// addresses it resolves to here.
type endpoint struct {
	host string
	port int32
	ips  []net.IP
}

func (e endpoint) String() string { return net.JoinHostPort(e.host, strconv.Itoa(int(e.port))) }

// SetVCenterReachable implements providers.VCenterReach on a user's
// management cluster with a NetworkPolicy: one in each namespace CAPV's
// manager runs in, on its pods, that lets their egress go anywhere but to
// the vCenter its objects name. A cluster whose network does not enforce
// NetworkPolicy would keep the policy and cut nothing, so the cut is
// proven first: a probe pod of faultline's image (WithProbeImage), on
// CAPV's node, reaches vCenter without the policy and must not under an
// equal one; where it still does, the policies are removed and the fault
// refused, saying why. Restoring deletes what the cut created, found by
// its labels, so `faultline recover` needs nothing else.
func (p *Provider) SetVCenterReachable(ctx context.Context, reachable bool) error {
	if reachable {
		return p.deleteCut(ctx)
	}
	plan, err := p.planCut(ctx)
	if err != nil {
		return err
	}
	for _, ns := range plan.namespaces() {
		pod := plan.podIn(ns)
		if err := p.proveCut(ctx, pod, plan.endpoints); err != nil {
			return errors.Join(err, p.deleteCut(ctx))
		}
		if err := p.c.Create(ctx, cutPolicy(ns, cutName, metav1.LabelSelector{MatchLabels: map[string]string{capvLabel: pod.Labels[capvLabel]}}, plan.endpoints)); err != nil {
			return fmt.Errorf("cut CAPV's way to vCenter in %s: %w", ns, err)
		}
	}
	return nil
}

// Preflight's part for vcenter.unreachable: what the cut acts on is
// there, and no policy of the cluster's lets CAPV through anyway.
func (p *Provider) preflightCut(ctx context.Context) error {
	_, err := p.planCut(ctx)
	return err
}

// planCut finds CAPV's pods and its vCenter, and refuses a cut a
// NetworkPolicy cannot make: no probe image, a pod on the host's network,
// a proxy between CAPV and vCenter, or a policy of the cluster's that
// allows the traffic (policies add up: one that allows wins).
func (p *Provider) planCut(ctx context.Context) (cutPlan, error) {
	const what = "vcenter.unreachable on a management cluster"
	if p.probeImage == "" {
		return cutPlan{}, fmt.Errorf("%s: no image to prove the cut with: give faultline's image on the cluster's nodes (--image; hack/image.sh builds it): %w", what, providers.ErrUnsupported)
	}
	var pods corev1.PodList
	if err := p.c.List(ctx, &pods, client.MatchingLabels{capvLabel: "infrastructure-vsphere"}); err != nil {
		return cutPlan{}, fmt.Errorf("%s: list CAPV's pods: %w", what, err)
	}
	var plan cutPlan
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		if pod.Spec.HostNetwork {
			return cutPlan{}, fmt.Errorf("%s: CAPV's pod %s/%s runs on its node's network, which no NetworkPolicy reaches: %w", what, pod.Namespace, pod.Name, providers.ErrUnsupported)
		}
		plan.pods = append(plan.pods, pod)
	}
	if len(plan.pods) == 0 {
		return cutPlan{}, fmt.Errorf("%s: no running pod labelled %s=infrastructure-vsphere (CAPV's manager, as clusterctl installs it): %w", what, capvLabel, providers.ErrUnsupported)
	}
	servers, err := VCenterServers(ctx, p.c, p.cluster)
	if err != nil {
		return cutPlan{}, fmt.Errorf("%s: %w", what, err)
	}
	if len(servers) == 0 {
		return cutPlan{}, fmt.Errorf("%s: no VSphereCluster or VSphereVM names a vCenter in spec.server: %w", what, providers.ErrUnsupported)
	}
	for server := range servers {
		e, err := resolveServer(ctx, server)
		if err != nil {
			return cutPlan{}, fmt.Errorf("%s: %w", what, err)
		}
		plan.endpoints = append(plan.endpoints, e)
	}
	sort.Slice(plan.endpoints, func(i, j int) bool { return plan.endpoints[i].String() < plan.endpoints[j].String() })
	for _, pod := range plan.pods {
		if err := p.refuseBypass(ctx, pod, plan.endpoints); err != nil {
			return cutPlan{}, fmt.Errorf("%s: %w", what, err)
		}
	}
	return plan, nil
}

// refuseBypass returns why a NetworkPolicy on vCenter's addresses would
// not cut pod's way there: a proxy it is told to use, or a policy of the
// cluster's that allows it.
func (p *Provider) refuseBypass(ctx context.Context, pod corev1.Pod, eps []endpoint) error {
	for _, c := range pod.Spec.Containers {
		for _, env := range c.Env {
			if strings.EqualFold(env.Name, "https_proxy") && env.Value != "" && !noProxy(c.Env, eps) {
				return fmt.Errorf("CAPV's pod %s/%s reaches vCenter through the proxy %s (%s), which a policy on vCenter's addresses does not cut: %w", pod.Namespace, pod.Name, redactURL(env.Value), env.Name, providers.ErrUnsupported)
			}
		}
	}
	var pols networkingv1.NetworkPolicyList
	if err := p.c.List(ctx, &pols, client.InNamespace(pod.Namespace)); err != nil {
		return fmt.Errorf("list the NetworkPolicies of %s: %w", pod.Namespace, err)
	}
	for _, e := range eps {
		for _, ip := range e.ips {
			if name := letsThrough(pols.Items, pod.Labels, ip, e.port); name != "" {
				return fmt.Errorf("the NetworkPolicy %s/%s lets CAPV's pod %s reach vCenter %s (%s), and policies add up, so a cut would cut nothing: %w", pod.Namespace, name, pod.Name, e, ip, providers.ErrUnsupported)
			}
		}
	}
	return nil
}

// noProxy tells whether a container's NO_PROXY covers every endpoint, so
// that it is dialled directly (the rule of golang.org/x/net/http/httpproxy,
// which govmomi's client follows: "*", a name and its subdomains, a
// leading-dot suffix, or an address block holding its address).
func noProxy(env []corev1.EnvVar, eps []endpoint) bool {
	var list []string
	for _, e := range env {
		if strings.EqualFold(e.Name, "no_proxy") {
			list = append(list, strings.Split(e.Value, ",")...)
		}
	}
	for _, e := range eps {
		if !slices.ContainsFunc(list, func(n string) bool { return bypasses(strings.TrimSpace(n), e) }) {
			return false
		}
	}
	return true
}

func bypasses(n string, e endpoint) bool {
	if n == "*" {
		return true
	}
	if _, block, err := net.ParseCIDR(n); err == nil {
		return slices.ContainsFunc(e.ips, block.Contains)
	}
	host, name := strings.ToLower(e.host), strings.ToLower(n)
	if name == "" {
		return false
	}
	if strings.HasPrefix(name, ".") {
		return strings.HasSuffix(host, name)
	}
	return host == name || strings.HasSuffix(host, "."+name)
}

// redactURL drops a proxy URL's credentials.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "(unparsed)"
	}
	return u.Redacted()
}

// resolveServer is a spec.server (a host, host:port or URL) with the
// addresses its host has here. The cluster's DNS may answer otherwise;
// the probe, which dials the name, catches that.
func resolveServer(ctx context.Context, server string) (endpoint, error) {
	u, ok := serverURL(server)
	if !ok {
		return endpoint{}, fmt.Errorf("spec.server %q: expected a host, host:port or URL", server)
	}
	port, err := strconv.ParseInt(portOf(u), 10, 32)
	if err != nil {
		return endpoint{}, fmt.Errorf("spec.server %q: port %q: expected a number", server, u.Port())
	}
	e := endpoint{host: u.Hostname(), port: int32(port)}
	if ip := net.ParseIP(e.host); ip != nil {
		e.ips = []net.IP{ip}
		return e, nil
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, e.host)
	if err != nil {
		return endpoint{}, fmt.Errorf("resolve vCenter %s (spec.server %q): %w", e.host, server, err)
	}
	for _, a := range addrs {
		e.ips = append(e.ips, a.IP)
	}
	return e, nil
}

func (c cutPlan) namespaces() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range c.pods {
		if !seen[p.Namespace] {
			seen[p.Namespace] = true
			out = append(out, p.Namespace)
		}
	}
	sort.Strings(out)
	return out
}

// podIn is one of CAPV's pods in ns: the probe runs beside it.
func (c cutPlan) podIn(ns string) corev1.Pod {
	for _, p := range c.pods {
		if p.Namespace == ns {
			return p
		}
	}
	return corev1.Pod{}
}

// cutPolicy lets the pods sel selects in ns send anywhere but to eps'
// addresses: to every pod (the API server, DNS) and every address outside
// them.
func cutPolicy(ns, name string, sel metav1.LabelSelector, eps []endpoint) *networkingv1.NetworkPolicy {
	v4 := networkingv1.IPBlock{CIDR: "0.0.0.0/0"}
	v6 := networkingv1.IPBlock{CIDR: "::/0"}
	for _, e := range eps {
		for _, ip := range e.ips {
			if ip.To4() != nil {
				v4.Except = append(v4.Except, ip.String()+"/32")
			} else {
				v6.Except = append(v6.Except, ip.String()+"/128")
			}
		}
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{labelManagedBy: "faultline", labelCut: "true"}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: sel,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &v4}, {IPBlock: &v6}, {NamespaceSelector: &metav1.LabelSelector{}},
			}}},
		},
	}
}

// deleteCut deletes the policies and probe pods vcenter.unreachable
// created, in every namespace; none is no error.
func (p *Provider) deleteCut(ctx context.Context) error {
	mine := client.MatchingLabels{labelManagedBy: "faultline", labelCut: "true"}
	var errs []error
	var pols networkingv1.NetworkPolicyList
	if err := p.c.List(ctx, &pols, mine); err != nil {
		return fmt.Errorf("restore CAPV's way to vCenter: list its NetworkPolicies: %w", err)
	}
	for i := range pols.Items {
		if err := p.c.Delete(ctx, &pols.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("restore CAPV's way to vCenter: delete NetworkPolicy %s/%s: %w", pols.Items[i].Namespace, pols.Items[i].Name, err))
		}
	}
	var pods corev1.PodList
	if err := p.c.List(ctx, &pods, mine); err != nil {
		return errors.Join(append(errs, fmt.Errorf("restore CAPV's way to vCenter: list its probe pods: %w", err))...)
	}
	for i := range pods.Items {
		if err := p.c.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("restore CAPV's way to vCenter: delete probe pod %s/%s: %w", pods.Items[i].Namespace, pods.Items[i].Name, err))
		}
	}
	return errors.Join(errs...)
}
