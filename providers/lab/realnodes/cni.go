package realnodes

import (
	"context"
	"fmt"
	"github.com/faultline-dev/faultline/providers/lab/labconfig"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cniAgentImage is the real nodes' pod network agent, preloaded in the
// node image (hack/kind-node/cni-agent.go).
const cniAgentImage = "faultline.dev/cni-agent:v1"

// cniAgentObjects are what a real-node cluster's CNI runs in kube-system:
// its agent's DaemonSet, named as the cluster's CNI names it (antrea-agent,
// calico-node), on the host network of every node, tolerating every taint,
// with the node's root at /host and the right to read Nodes. It reaches
// the API server through endpoint (the load balancer), as kind's kindnetd
// does through CONTROL_PLANE_ENDPOINT: not through the kubernetes
// Service, whose address kube-proxy serves only once it runs. A Node turns
// Ready only once its agent pod has run, so an admission webhook that
// refuses the pod keeps the node out, as it does with the real CNI.
func cniAgentObjects(cni, endpoint string) []client.Object {
	name := labconfig.CNIAgents[cni].Name
	if name == "" {
		name = cni + "-agent"
	}
	labels := map[string]string{"app.kubernetes.io/name": name}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}}},
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: metav1.NamespaceSystem, Name: name}},
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: name,
					HostNetwork:        true,
					PriorityClassName:  "system-node-critical",
					Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:            "agent",
						Image:           cniAgentImage,
						ImagePullPolicy: corev1.PullNever,
						Env: []corev1.EnvVar{
							{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{
								FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"},
							}},
							{Name: "CONTROL_PLANE_ENDPOINT", Value: endpoint},
						},
						SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
						VolumeMounts:    []corev1.VolumeMount{{Name: "host", MountPath: "/host"}},
					}},
					Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{
						HostPath: &corev1.HostPathVolumeSource{Path: "/"},
					}}},
				},
			},
		},
	}
	return []client.Object{role, sa, binding, ds}
}

// ensureCNIAgent creates the cluster's CNI agent objects that are missing
// (a user may have changed the others: they are left as they are).
func ensureCNIAgent(ctx context.Context, c client.Client, cni, endpoint string) error {
	for _, o := range cniAgentObjects(cni, endpoint) {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create the CNI agent's %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}
