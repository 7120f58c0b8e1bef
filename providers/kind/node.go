package kind

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/internal/nodecmd"
	"github.com/faultline-dev/faultline/providers"
)

// exec runs a command in a node container.
func (p *Provider) exec(ctx context.Context, obj providers.Object, cmd ...string) ([]byte, error) {
	return p.docker.Run(ctx, append([]string{"exec", obj.Name}, cmd...)...)
}

// SetKubelet implements providers.NodeKubelet: systemctl in the node.
func (p *Provider) SetKubelet(ctx context.Context, obj providers.Object, running bool) error {
	_, err := p.exec(ctx, obj, nodecmd.Kubelet(running)...)
	return err
}

// SetStaticPod implements providers.NodeStaticPods: the component's
// manifest is moved out of /etc/kubernetes/manifests and back, as an
// operator would.
func (p *Provider) SetStaticPod(ctx context.Context, obj providers.Object, component string, running bool) error {
	if err := providers.RequireControlPlane(obj, "static pods"); err != nil {
		return err
	}
	_, err := p.exec(ctx, obj, nodecmd.StaticPod(component, running)...)
	return err
}

// StaticPodRunning implements providers.NodeStaticPods: a process of the
// component's name runs in the node container.
func (p *Provider) StaticPodRunning(ctx context.Context, obj providers.Object, component string) (bool, error) {
	if err := providers.RequireControlPlane(obj, "static pods"); err != nil {
		return false, err
	}
	out, err := p.exec(ctx, obj, nodecmd.ProcessNames...)
	if err != nil {
		return false, err
	}
	return nodecmd.Running(out, component), nil
}

// NodeOf implements providers.Nodes: the node container's Node.
func (p *Provider) NodeOf(ctx context.Context, obj providers.Object) (providers.MachineState, error) {
	st := providers.MachineState{Name: obj.Name, Phase: "Running"}
	_, gone, err := p.inspect(ctx, obj)
	if err != nil {
		return st, err
	}
	if gone {
		st.Gone, st.Phase = true, ""
		return st, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	n := &corev1.Node{}
	if err := p.c.Get(ctx, client.ObjectKey{Name: obj.Name}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return st, nil
		}
		return st, fmt.Errorf("get Node %s: %w", obj.Name, err)
	}
	st.Node = n.Name
	st.Stamps = map[string]time.Time{"node created": n.CreationTimestamp.Time}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			st.NodeReady, st.NodeMessage = string(c.Status), c.Message
			st.Stamps["node ready changed"] = c.LastTransitionTime.Time
		}
	}
	return st, nil
}

// APIServer implements providers.Nodes: a read of one Node.
func (p *Provider) APIServer(ctx context.Context, _ providers.Object) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var nodes corev1.NodeList
	return p.c.List(ctx, &nodes, client.Limit(1))
}
