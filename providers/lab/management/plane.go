package management

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	infrav1beta1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta1"
	infrav1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2"
	addonsv1beta1 "sigs.k8s.io/cluster-api/api/addons/v1beta1"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	bootstrapv1beta1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta1"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1beta1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta1"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/api/core/v1beta2/index"
	ipamv1alpha1 "sigs.k8s.io/cluster-api/api/ipam/v1alpha1"
	ipamv1beta1 "sigs.k8s.io/cluster-api/api/ipam/v1beta1"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	runtimev1alpha1 "sigs.k8s.io/cluster-api/api/runtime/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// newScheme registers every API the management cluster serves: the hub
// versions the controllers use and the older versions conversion needs,
// as the four main.go files register them (wiring_test.go).
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, storagev1.AddToScheme,
		clusterv1.AddToScheme, clusterv1beta1.AddToScheme,
		addonsv1.AddToScheme, addonsv1beta1.AddToScheme,
		runtimev1.AddToScheme, runtimev1alpha1.AddToScheme,
		bootstrapv1.AddToScheme, bootstrapv1beta1.AddToScheme,
		controlplanev1.AddToScheme, controlplanev1beta1.AddToScheme,
		infrav1.AddToScheme, infrav1beta1.AddToScheme,
		ipamv1.AddToScheme, ipamv1beta1.AddToScheme, ipamv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	return s, nil
}

// Plane is the lab's management cluster: a real kube-apiserver and etcd
// (envtest) with the Cluster API and CAPV controllers and webhooks of one
// stack, run in this process as one controller-runtime manager (the
// compiled stack) or as the stack's own manager binaries, one process
// each (processes.go).
type Plane struct {
	env    *envtest.Environment
	cfg    *rest.Config
	scheme *runtime.Scheme
	stack  labconfig.Stack
	// mgr runs the controllers in this process, or, for a stack of
	// processes, only the lab's own cache of the management cluster.
	mgr cluster.Cluster
	// client is the lab's client: a handover from mgr's (the compiled
	// stack), or a versioned one over mgr's cache (versioned.go).
	client   client.Client
	managers []*manager
	// runs are the controller managers and caches running in this
	// process, in start order: mgr, then an upgrade's controllers.
	runs []*run
	// upgrades are the stacks it ran before (Upgrade).
	upgrades []Upgraded
	// fromState: kube-apiserver and etcd started from a stored state;
	// hold holds its webhook server's port (nil: not served again).
	fromState bool
	hold      *portHold
}

// A run is a controller manager or cache running in this process.
type run struct {
	cancel  context.CancelFunc
	stopped chan struct{}
	err     error
}

func (m *Plane) setup(ctx context.Context, scheme *runtime.Scheme, manifests *manifests, in Input) error {
	sync := in.Profile.SyncPeriod
	wo := m.env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(m.cfg, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  in.Log,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		GracefulShutdownTimeout: ptr.To(stopGrace),
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir,
		}),
		Cache: cache.Options{SyncPeriod: &sync},
		// As the real managers do (Cluster API's setup.ManagerClientOptions):
		// Secrets and ConfigMaps are read live, and unstructured objects
		// (the infrastructure and bootstrap objects and templates a
		// Machine, MachineSet or KCP refers to) from the cache. Without
		// the latter, every such read was a GET on kube-apiserver: 35% of
		// its requests in a lab of 20 clusters.
		Client: client.Options{Cache: &client.CacheOptions{
			DisableFor:   []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}},
			Unstructured: true,
		}},
		Controller: config.Controller{
			// Every controller of the four real managers runs in this one;
			// names only have to be unique per manager.
			SkipNameValidation: ptr.To(true),
		},
	})
	if err != nil {
		return fmt.Errorf("create controller manager: %w", err)
	}
	if m.mgr == nil {
		m.mgr = mgr
		m.client = &handover{c: mgr.GetClient()}
	}
	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		return fmt.Errorf("add Cluster API indexes: %w", err)
	}
	secretReader, err := client.New(mgr.GetConfig(), client.Options{
		Scheme: scheme, HTTPClient: mgr.GetHTTPClient(),
		Cache: &client.CacheOptions{Reader: mgr.GetCache()},
	})
	if err != nil {
		return fmt.Errorf("create secret caching client: %w", err)
	}
	cc, err := newClusterCache(ctx, mgr, secretReader, in.Profile)
	if err != nil {
		return err
	}

	apiVersionGetter := func(gk schema.GroupKind) (string, error) {
		crd := manifests.crdFor(gk.Group, gk.Kind)
		if crd == nil {
			return "", fmt.Errorf("no CRD for %s", gk)
		}
		if v, ok := crd.Labels["cluster.x-k8s.io/v1beta2"]; ok {
			return schema.GroupVersion{Group: gk.Group, Version: v}.String(), nil
		}
		if v := storageVersion(crd); v != "" {
			return schema.GroupVersion{Group: gk.Group, Version: v}.String(), nil
		}
		return "", fmt.Errorf("CRD %s has no storage version", crd.Name)
	}
	clusterv1beta1.SetAPIVersionGetter(apiVersionGetter)
	controlplanev1beta1.SetAPIVersionGetter(apiVersionGetter)

	return errors.Join(
		m.addWebhooks(mgr, cc),
		m.addControllers(ctx, mgr, cc, secretReader, in),
		m.run(ctx, mgr),
	)
}

// run starts c (a controller manager or a cache) until Stop and waits for
// its caches.
func (m *Plane) run(ctx context.Context, c cluster.Cluster) error {
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &run{cancel: cancel, stopped: make(chan struct{})}
	m.runs = append(m.runs, r)
	go func() {
		defer close(r.stopped)
		r.err = c.Start(mctx)
	}()
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if !c.GetCache().WaitForCacheSync(wctx) {
		return fmt.Errorf("controller caches did not sync within a minute")
	}
	return nil
}

// Stop stops the controllers, then the API server and etcd.
// kube-apiserver is killed first (stopEnv says why): the controllers'
// webhook server then has no connection of its to wait for, which took
// it a second to drain.
func (m *Plane) Stop() error {
	var errs []error
	if err := killStarted(m.env.ControlPlane.APIServer.Path); err != nil {
		errs = append(errs, fmt.Errorf("stop the management cluster: %w", err))
	}
	errs = append(errs, stopAll(m.managers))
	for i := len(m.runs) - 1; i >= 0; i-- {
		errs = append(errs, m.runs[i].stop())
	}
	m.runs = nil
	errs = append(errs, m.stopEnv(), m.hold.release())
	m.hold = nil
	return errors.Join(errs...)
}

// stop cancels r and waits for it to end. When its controllers did not
// finish their work within stopGrace, the error names what they were
// doing.
func (r *run) stop() error {
	r.cancel()
	wait := stopGrace + 10*time.Second
	select {
	case <-r.stopped:
		if r.err != nil {
			return fmt.Errorf("controller manager: %w%s", r.err, busyReport())
		}
		return nil
	case <-time.After(wait):
		return fmt.Errorf("controller manager did not stop within %s%s", wait, busyReport())
	}
}

// busyReport is busyGoroutines as the end of an error, "" when none is.
func busyReport() string {
	b := busyGoroutines()
	if b == "" {
		return ""
	}
	return "; its busy goroutines:\n" + b
}

// Client is the lab's client of the management cluster: it reads from a
// cache, and reads and writes the compiled release's API versions on
// every stack.
func (m *Plane) Client() client.Client { return m.client }

// Scheme is every API version the lab knows.
func (m *Plane) Scheme() *runtime.Scheme { return m.scheme }

// Config reaches the management cluster's kube-apiserver as its admin.
func (m *Plane) Config() *rest.Config { return m.cfg }

func concurrency(n int) controller.Options { return controller.Options{MaxConcurrentReconciles: n} }

// newClusterCache is Cluster API's cache of workload cluster connections,
// set up as its own managers do.
func newClusterCache(ctx context.Context, mgr ctrl.Manager, secretReader client.Client, p labconfig.Profile) (clustercache.ClusterCache, error) {
	cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: secretReader,
		Cache: clustercache.CacheOptions{
			Indexes: []clustercache.CacheOptionsIndex{clustercache.NodeProviderIDIndex},
		},
		Client: clustercache.ClientOptions{
			UserAgent: "faultline-lab",
			Cache: clustercache.ClientCacheOptions{
				// The list from Cluster API's own setup
				// (internal/setup.ClusterCacheClientOptions): without it a
				// remediated Machine hangs in drain on a missing index, or,
				// when its Node is still reachable, in the wait for volumes
				// ("continue list option is not supported by the cache").
				DisableFor: []client.Object{
					&corev1.ConfigMap{}, &corev1.Secret{}, &corev1.Pod{}, &appsv1.DaemonSet{},
					&storagev1.VolumeAttachment{}, &corev1.PersistentVolume{},
				},
			},
		},
	}, concurrency(10))
	if err != nil {
		return nil, fmt.Errorf("create ClusterCache: %w", err)
	}
	if s, ok := cc.(interface{ SetConnectionCreationRetryInterval(time.Duration) }); ok {
		s.SetConnectionCreationRetryInterval(p.ConnectRetry)
	}
	return cc, nil
}
