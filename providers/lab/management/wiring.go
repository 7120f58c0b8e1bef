package management

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	infrav1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2"
	capvcontrollers "sigs.k8s.io/cluster-api-provider-vsphere/controllers"
	capvcontext "sigs.k8s.io/cluster-api-provider-vsphere/pkg/context"
	capvwebhooks "sigs.k8s.io/cluster-api-provider-vsphere/webhooks"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	cabpkcontrollers "sigs.k8s.io/cluster-api/bootstrap/kubeadm/controllers"
	cabpkwebhooks "sigs.k8s.io/cluster-api/bootstrap/kubeadm/webhooks"
	capicontrollers "sigs.k8s.io/cluster-api/controllers"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/controllers/crdmigrator"
	kcpcontrollers "sigs.k8s.io/cluster-api/controlplane/kubeadm/controllers"
	kcpwebhooks "sigs.k8s.io/cluster-api/controlplane/kubeadm/webhooks"
	capiwebhooks "sigs.k8s.io/cluster-api/webhooks"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// This file wires the compiled release's four managers into one
// controller manager as their main.go files do with their flags'
// defaults: the same controllers, webhooks and CRD migrations, the same
// reconciler fields and the same concurrency. The differences made on
// purpose are labconfig.InProcess; wiring_test.go reads each main.go from
// the module cache and fails on any other, so a move of go.mod that adds
// a controller, a webhook or a default cannot go unnoticed. Keep the calls
// in main.go's shape, (&pkg.Type{...}).SetupWithManager(ctx, mgr, opts),
// for that test to read them.

func (m *Plane) addWebhooks(mgr ctrl.Manager, cc clustercache.ClusterCache) error {
	return errors.Join(
		// Cluster API's core manager (setupWebhooks).
		(&capiwebhooks.ClusterClass{Client: mgr.GetClient()}).SetupWebhookWithManager(mgr),
		(&capiwebhooks.Cluster{Client: mgr.GetClient(), ClusterCacheReader: cc}).SetupWebhookWithManager(mgr),
		(&capiwebhooks.Machine{}).SetupWebhookWithManager(mgr),
		(&capiwebhooks.MachineSet{}).SetupWebhookWithManager(mgr),
		(&capiwebhooks.MachineDeployment{}).SetupWebhookWithManager(mgr),
		(&capiwebhooks.MachineDrainRule{}).SetupWebhookWithManager(mgr),
		(&capiwebhooks.MachinePool{}).SetupWebhookWithManager(mgr),
		(&capiwebhooks.ClusterResourceSet{}).SetupWebhookWithManager(mgr),
		(&capiwebhooks.ClusterResourceSetBinding{}).SetupWebhookWithManager(mgr),
		(&capiwebhooks.MachineHealthCheck{}).SetupWebhookWithManager(mgr),
		(&capiwebhooks.ExtensionConfig{}).SetupWebhookWithManager(mgr),
		(&capiwebhooks.IPAddress{Client: mgr.GetAPIReader()}).SetupWebhookWithManager(mgr),
		(&capiwebhooks.IPAddressClaim{}).SetupWebhookWithManager(mgr),
		// CABPK.
		(&cabpkwebhooks.KubeadmConfig{}).SetupWebhookWithManager(mgr),
		(&cabpkwebhooks.KubeadmConfigTemplate{}).SetupWebhookWithManager(mgr),
		// KCP.
		(&kcpwebhooks.KubeadmControlPlane{}).SetupWebhookWithManager(mgr),
		(&kcpwebhooks.ScaleValidator{Client: mgr.GetClient()}).SetupWebhookWithManager(mgr),
		(&kcpwebhooks.KubeadmControlPlaneTemplate{}).SetupWebhookWithManager(mgr),
		// CAPV in govmomi mode (setupVAPIControllers).
		(&capvwebhooks.VSphereClusterTemplate{}).SetupWebhookWithManager(mgr),
		(&capvwebhooks.VSphereMachine{}).SetupWebhookWithManager(mgr),
		(&capvwebhooks.VSphereMachineTemplate{}).SetupWebhookWithManager(mgr),
		(&capvwebhooks.VSphereVM{}).SetupWebhookWithManager(mgr),
		(&capvwebhooks.VSphereDeploymentZone{}).SetupWebhookWithManager(mgr),
		(&capvwebhooks.VSphereFailureDomain{}).SetupWebhookWithManager(mgr),
	)
}

// allPreflightChecks is --machineset-preflight-checks' default, All: a
// MachineSet defers a scale up and a remediation while its control plane
// upgrades or is out of kubeadm's version skew.
var allPreflightChecks = sets.New(clusterv1.MachineSetPreflightCheckAll)

// The concurrencies below are each manager's flag defaults (for example
// Cluster API's --machine-concurrency 100); a lab of 20 clusters was
// measured with 10 everywhere before 2026-12-02.
func (m *Plane) addControllers(ctx context.Context, mgr ctrl.Manager, cc clustercache.ClusterCache, secretReader client.Client, in Input) error {
	p := in.Profile
	partialSecrets, err := partialSecretCache(mgr, p.SyncPeriod)
	if err != nil {
		return err
	}
	capv := &capvcontext.ControllerManagerContext{
		Namespace: "capv-system", Name: "faultline-lab", LeaderElectionID: "faultline-lab",
		Client: mgr.GetClient(), Logger: in.Log.WithName("capv"), Scheme: mgr.GetScheme(),
		Username: in.VCUser, Password: in.VCPass,
	}
	return errors.Join(
		// Cluster API's core manager (setupReconcilers).
		(&crdmigrator.CRDMigrator{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: crdMigrations,
		}).SetupWithManager(ctx, mgr, concurrency(1)),
		(&capicontrollers.ClusterReconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: cc,
			RemoteConnectionGracePeriod: p.RemoteConnectionGrace(),
		}).SetupWithManager(ctx, mgr, concurrency(50)),
		(&capicontrollers.MachineReconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: cc,
			RemoteConditionsGracePeriod: p.RemoteGrace,
		}).SetupWithManager(ctx, mgr, concurrency(100)),
		(&capicontrollers.MachineSetReconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: cc,
			PreflightChecks: allPreflightChecks,
		}).SetupWithManager(ctx, mgr, concurrency(50)),
		(&capicontrollers.MachineDeploymentReconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		}).SetupWithManager(ctx, mgr, concurrency(50)),
		(&capicontrollers.MachinePoolReconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: cc,
		}).SetupWithManager(ctx, mgr, concurrency(50)),
		(&capicontrollers.ClusterResourceSetReconciler{
			Client: mgr.GetClient(), ClusterCache: cc,
		}).SetupWithManager(ctx, mgr, concurrency(10), partialSecrets),
		(&capicontrollers.ClusterResourceSetBindingReconciler{
			Client: mgr.GetClient(),
		}).SetupWithManager(ctx, mgr, concurrency(10)),
		(&capicontrollers.MachineHealthCheckReconciler{
			Client: mgr.GetClient(), ClusterCache: cc,
		}).SetupWithManager(ctx, mgr, concurrency(50)),
		// CABPK.
		(&cabpkcontrollers.KubeadmConfigReconciler{
			Client: mgr.GetClient(), SecretCachingClient: secretReader, ClusterCache: cc,
			TokenTTL: cabpkcontrollers.DefaultTokenTTL,
		}).SetupWithManager(ctx, mgr, concurrency(100)),
		// KCP: its main.go gives a reconcile 3 minutes, as it may call
		// every etcd member.
		(&kcpcontrollers.KubeadmControlPlaneReconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), SecretCachingClient: secretReader,
			ClusterCache: cc, EtcdDialTimeout: p.EtcdDialTimeout, EtcdCallTimeout: p.EtcdCallTimeout,
			EtcdLogger:                  zap.NewNop(),
			RemoteConditionsGracePeriod: p.RemoteGrace,
		}).SetupWithManager(ctx, mgr, controller.Options{
			MaxConcurrentReconciles: 100,
			ReconciliationTimeout:   3 * time.Minute,
		}),
		// CAPV in govmomi mode (setupVAPIControllers).
		capvcontrollers.AddClusterControllerToManager(ctx, capv, mgr, false, concurrency(10)),
		capvcontrollers.AddMachineControllerToManager(ctx, capv, mgr, false, concurrency(10)),
		capvcontrollers.AddVMControllerToManager(ctx, capv, mgr, cc, concurrency(10)),
		capvcontrollers.AddVsphereClusterIdentityControllerToManager(ctx, capv, mgr, concurrency(10)),
		capvcontrollers.AddVSphereDeploymentZoneControllerToManager(ctx, capv, mgr, concurrency(10)),
	)
}

// partialSecretCache is the core manager's cache of Secrets' metadata
// alone, which the ClusterResourceSet controller watches: a Secret it
// names may carry no cluster label, which the manager's own cache of
// Secrets selects by.
func partialSecretCache(mgr ctrl.Manager, sync time.Duration) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		SyncPeriod: &sync,
		DefaultTransform: func(in any) (any, error) {
			if obj, ok := in.(*metav1.PartialObjectMetadata); ok {
				obj.SetManagedFields(nil)
			}
			return in, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("create the cache of Secrets' metadata: %w", err)
	}
	if err := mgr.Add(managerCache{c}); err != nil {
		return nil, fmt.Errorf("start the cache of Secrets' metadata: %w", err)
	}
	return c, nil
}

// managerCache adds a cache to a manager as controller-runtime adds a
// cluster's: in the group of caches, started and synced before the
// controllers and stopped after them. Cluster API's main.go adds this
// cache as it is, and an informer cache needs no leader election, so
// it joins the group the manager stops first: a ClusterResourceSet
// watch on it whose mapper lists through the manager's cache, not yet
// synced, then held the stop for the whole grace period (a lab stopped
// seconds after upgrade.management to the compiled stack). Only the
// start and stop order differs from the binary's.
type managerCache struct{ cache.Cache }

// GetCache makes managerCache one of the manager's caches.
func (c managerCache) GetCache() cache.Cache { return c.Cache }

// crdMigrations are the objects the four managers' CRD migrators move to
// their CRDs' storage versions after an upgrade, as each main.go lists
// them (ClusterClass and ExtensionConfig are left out with their gates,
// off by default, as there).
var crdMigrations = map[client.Object]crdmigrator.ByObjectConfig{
	&addonsv1.ClusterResourceSetBinding{}:         {UseCache: false},
	&addonsv1.ClusterResourceSet{}:                {UseCache: false, UseStatusForStorageVersionMigration: true},
	&clusterv1.Cluster{}:                          {UseCache: false, UseStatusForStorageVersionMigration: true},
	&clusterv1.MachineDeployment{}:                {UseCache: false, UseStatusForStorageVersionMigration: true},
	&clusterv1.MachineDrainRule{}:                 {UseCache: false},
	&clusterv1.MachineHealthCheck{}:               {UseCache: false, UseStatusForStorageVersionMigration: true},
	&clusterv1.Machine{}:                          {UseCache: false, UseStatusForStorageVersionMigration: true},
	&clusterv1.MachineSet{}:                       {UseCache: false, UseStatusForStorageVersionMigration: true},
	&clusterv1.MachinePool{}:                      {UseCache: false, UseStatusForStorageVersionMigration: true},
	&ipamv1.IPAddress{}:                           {UseCache: false},
	&ipamv1.IPAddressClaim{}:                      {UseCache: false, UseStatusForStorageVersionMigration: true},
	&controlplanev1.KubeadmControlPlane{}:         {UseCache: false, UseStatusForStorageVersionMigration: true},
	&controlplanev1.KubeadmControlPlaneTemplate{}: {UseCache: false},
	&bootstrapv1.KubeadmConfig{}:                  {UseCache: false, UseStatusForStorageVersionMigration: true},
	&bootstrapv1.KubeadmConfigTemplate{}:          {UseCache: false},
	&infrav1.VSphereCluster{}:                     {UseCache: true, UseStatusForStorageVersionMigration: true},
	&infrav1.VSphereClusterTemplate{}:             {UseCache: false},
	&infrav1.VSphereMachine{}:                     {UseCache: true, UseStatusForStorageVersionMigration: true},
	&infrav1.VSphereMachineTemplate{}:             {UseCache: true},
	&infrav1.VSphereVM{}:                          {UseCache: true, UseStatusForStorageVersionMigration: true},
	&infrav1.VSphereClusterIdentity{}:             {UseCache: true, UseStatusForStorageVersionMigration: true},
	&infrav1.VSphereDeploymentZone{}:              {UseCache: true, UseStatusForStorageVersionMigration: true},
	&infrav1.VSphereFailureDomain{}:               {UseCache: true},
}
