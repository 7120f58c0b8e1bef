package workloadapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/authentication/user"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	inmemoryclient "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime/client"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Admitter runs a workload cluster's admission webhooks on the pods the
// node simulator creates, as kube-apiserver would: the in-memory API server
// runs none. It is Kubernetes' own webhook admission (k8s.io/apiserver):
// its rules, namespace and object selectors, failurePolicy and timeouts,
// and a real HTTPS call to the webhook. The configurations come from the
// workload API through informers.
//
// A Service is reached as kube-proxy would route it: a dial to its
// ClusterIP goes to a ready endpoint. Only loopback endpoints are dialled;
// with none ready, the dial goes to a closed loopback port, so the refusal
// is the kernel's, reported for the ClusterIP as kube-apiserver reports it.
type Admitter struct {
	validating *validating.Plugin
	mutating   *mutating.Plugin
	mem        inmemoryclient.Client
	scheme     *runtime.Scheme
	// refused is a loopback port nothing listens on.
	refused string
	// routed tells whether pods on a node are reachable (the CNI gave the
	// node addresses).
	routed func(ctx context.Context, node string) (bool, error)
	// stop stops its informers.
	stop context.CancelFunc
}

// AdmitterInput is what an Admitter is wired to.
type AdmitterInput struct {
	// Config reaches the workload cluster's API; Store is the same
	// cluster's store, read to route Service calls.
	Config *rest.Config
	Store  inmemoryclient.Client
	Scheme *runtime.Scheme
	// Refused is a loopback port nothing listens on, where a Service
	// without a ready endpoint leads.
	Refused string
	// Routed tells whether pods on node are reachable; a webhook pod on a
	// node that is not is not answered, as a call into a CNI without a
	// route.
	Routed func(ctx context.Context, node string) (bool, error)
}

// NewAdmitter wires the plugins to the workload cluster in names and
// starts their informers until ctx ends or Stop.
func NewAdmitter(ctx context.Context, in AdmitterInput) (*Admitter, error) {
	cs, err := kubernetes.NewForConfig(in.Config)
	if err != nil {
		return nil, fmt.Errorf("admission client: %w", err)
	}
	ctx, stop := context.WithCancel(ctx)
	a := &Admitter{mem: in.Store, scheme: in.Scheme, refused: in.Refused, routed: in.Routed, stop: stop}
	if a.validating, err = validating.NewValidatingAdmissionWebhook(nil); err != nil {
		return nil, fmt.Errorf("validating admission: %w", err)
	}
	if a.mutating, err = mutating.NewMutatingWebhook(nil); err != nil {
		return nil, fmt.Errorf("mutating admission: %w", err)
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	wrap := func(webhookutil.AuthenticationInfoResolver) webhookutil.AuthenticationInfoResolver { return a }
	for _, p := range []interface {
		SetExternalKubeClientSet(kubernetes.Interface)
		SetExternalKubeInformerFactory(informers.SharedInformerFactory)
		SetServiceResolver(webhookutil.ServiceResolver)
		SetAuthenticationInfoResolverWrapper(webhookutil.AuthenticationInfoResolverWrapper)
		ValidateInitialization() error
	}{a.validating, a.mutating} {
		p.SetExternalKubeClientSet(cs)
		p.SetExternalKubeInformerFactory(f)
		p.SetServiceResolver(a)
		p.SetAuthenticationInfoResolverWrapper(wrap)
		if err := p.ValidateInitialization(); err != nil {
			return nil, fmt.Errorf("admission: %w", err)
		}
	}
	f.Start(ctx.Done())
	return a, nil
}

// Stop stops the admitter's informers.
func (a *Admitter) Stop() { a.stop() }

// Admit runs the mutating then the validating webhooks on the creation of
// pod by user, as kube-apiserver's admission chain does.
func (a *Admitter) Admit(ctx context.Context, pod *corev1.Pod, by string) error {
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	return a.run(ctx, admission.NewAttributesRecord(pod, nil, gvk, pod.Namespace, pod.Name, corev1.SchemeGroupVersion.WithResource("pods"), "",
		admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: by}))
}

// run runs the mutating then the validating webhooks on attrs.
func (a *Admitter) run(ctx context.Context, attrs admission.Attributes) error {
	o := admission.NewObjectInterfacesFromScheme(a.scheme)
	if err := a.mutating.Admit(ctx, attrs, o); err != nil {
		return err
	}
	return a.validating.Validate(ctx, attrs, o)
}

// ResolveEndpoint implements webhookutil.ServiceResolver: a Service
// resolves to its ClusterIP.
func (a *Admitter) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	svc, err := a.service(context.Background(), namespace, name)
	if err != nil {
		return nil, err
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return nil, fmt.Errorf("service %s/%s has no cluster IP", namespace, name)
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(port)))}, nil
}

// ClientConfigFor implements webhookutil.AuthenticationInfoResolver for
// webhooks named by URL.
func (a *Admitter) ClientConfigFor(string) (*rest.Config, error) {
	return &rest.Config{Dial: a.dial}, nil
}

// ClientConfigForService implements webhookutil.AuthenticationInfoResolver.
func (a *Admitter) ClientConfigForService(string, string, int) (*rest.Config, error) {
	return &rest.Config{Dial: a.dial}, nil
}

// dial routes a ClusterIP to a ready endpoint and dials only loopback.
func (a *Admitter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	target := addr
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		target, err = a.route(ctx, host, port)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Addr: tcpAddr(addr), Err: err}
		}
	}
	if target == unanswered {
		// SYNs reach the pod, its SYN-ACKs are routed to another node:
		// the connect waits until the caller gives up.
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, target)
	if err != nil && target == a.refused {
		// The refusal is real; it is reported for the address dialled, as
		// kube-proxy's reject of a Service without endpoints is.
		var op *net.OpError
		if errors.As(err, &op) {
			op.Addr = tcpAddr(addr)
			return nil, op
		}
	}
	return c, err
}

// unanswered is the route to a pod whose replies never come back: it runs
// on a node without a Calico block of its own, so its address is borrowed
// from another node's block, where the replies are routed (seed 001).
const unanswered = "unanswered"

// route finds the Service with ClusterIP ip and a ready loopback endpoint
// for its port; without one it is the refused port; a pod on a node
// without a Calico block is unanswered.
func (a *Admitter) route(ctx context.Context, ip, port string) (string, error) {
	var svcs corev1.ServiceList
	if err := ListInto(ctx, a.mem, &svcs); err != nil {
		return "", err
	}
	for _, svc := range svcs.Items {
		if svc.Spec.ClusterIP != ip {
			continue
		}
		name, found := "", false
		for _, sp := range svc.Spec.Ports {
			if strconv.Itoa(int(sp.Port)) == port {
				name, found = sp.Name, true
			}
		}
		if !found {
			return a.refused, nil
		}
		var eps corev1.Endpoints
		if err := GetInto(ctx, a.mem, client.ObjectKey{Namespace: svc.Namespace, Name: svc.Name}, &eps); err != nil {
			return a.refused, nil //nolint:nilerr // no Endpoints object is no ready endpoint
		}
		for _, sub := range eps.Subsets {
			for _, ep := range sub.Ports {
				if ep.Name != name && len(sub.Ports) > 1 {
					continue
				}
				for _, addr := range sub.Addresses {
					if ip := net.ParseIP(addr.IP); ip == nil || !ip.IsLoopback() {
						return "", fmt.Errorf("endpoint %s of service %s/%s is not a loopback address; the lab dials only loopback", addr.IP, svc.Namespace, svc.Name)
					}
					if addr.NodeName != nil {
						routed, err := a.routed(ctx, *addr.NodeName)
						if err != nil {
							return "", err
						}
						if !routed {
							return unanswered, nil
						}
					}
					return net.JoinHostPort(addr.IP, strconv.Itoa(int(ep.Port))), nil
				}
			}
		}
		return a.refused, nil
	}
	return "", fmt.Errorf("no service has cluster IP %s", ip)
}

func (a *Admitter) service(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	svc := &corev1.Service{}
	if err := GetInto(ctx, a.mem, client.ObjectKey{Namespace: namespace, Name: name}, svc); err != nil {
		return nil, fmt.Errorf("service %s/%s: %w", namespace, name, err)
	}
	return svc, nil
}

func tcpAddr(addr string) net.Addr {
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil
	}
	return a
}

// GetInto reads an object of the in-memory store, which may hold it
// unstructured (written through the API), into a typed one.
func GetInto(ctx context.Context, c inmemoryclient.Client, key client.ObjectKey, into client.Object) error {
	gvk, err := kindOf(into)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if lc, ok := c.(*lockedClient); ok {
		return lc.getConverted(ctx, key, u, into)
	}
	if err := c.Get(ctx, key, u); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// ListInto is GetInto for lists.
func ListInto(ctx context.Context, c inmemoryclient.Client, into client.ObjectList, opts ...client.ListOption) error {
	gvk, err := kindOf(into)
	if err != nil {
		return err
	}
	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(gvk)
	if err := c.List(ctx, u, opts...); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), into)
}

// kindOf names a built-in kind (the lab reads only those typed).
func kindOf(o runtime.Object) (schema.GroupVersionKind, error) {
	gvks, _, err := clientgoscheme.Scheme.ObjectKinds(o)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of %T: %v", o, err)
	}
	return gvks[0], nil
}
