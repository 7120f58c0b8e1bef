package management

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// warmPoll is how often warmWatchCaches asks again of a watch cache that
// is still filling.
const warmPoll = 20 * time.Millisecond

// warmWatchCaches has kube-apiserver fill the watch caches of crds before
// any controller watches them, and waits until they are filled (at most
// crdWait).
//
// kube-apiserver makes a CRD's storage, and a watch cache for each of
// its versions, on the first request for the CRD. Until a watch cache has
// listed etcd, it answers watches and lists with 429 and "Retry-After:
// 1" (KEP-4568, ResilientWatchCacheInitialization), and client-go waits
// that second. So every informer of a fresh management plane waited 1 s
// for its first watch: the controllers of a lab started 1.4 s after its
// plane, and a reconcile that starts an informer of its own (CAPV's
// VSphereFailureDomains, the Machine controller's MachineDrainRules)
// waited a second again later. A management cluster that has been up a
// while has all of them filled; this makes a new one so before its
// controllers start. It changes none of kube-apiserver's flags.
func warmWatchCaches(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	c := rest.CopyConfig(cfg)
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return fmt.Errorf("warm the watch caches: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, crdWait)
	defer cancel()
	errs := make([]error, len(crds))
	var wg sync.WaitGroup
	for i, crd := range crds {
		wg.Go(func() { errs[i] = warmWatchCache(ctx, rc, crd) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// warmWatchCache lists crd's objects from the watch cache
// (resourceVersion 0) of each of its served versions until it answers.
// Such a list is the one a cache still filling answers with 429: one
// with a limit is read from etcd instead.
func warmWatchCache(ctx context.Context, rc *rest.RESTClient, crd *apiextensionsv1.CustomResourceDefinition) error {
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		for {
			err := rc.Get().AbsPath("apis", crd.Spec.Group, v.Name, crd.Spec.Names.Plural).
				Param("resourceVersion", "0").MaxRetries(0).Do(ctx).Error()
			if err != nil && !apierrors.IsTooManyRequests(err) {
				return fmt.Errorf("warm the watch cache of %s %s: %w", crd.Name, v.Name, err)
			}
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the watch cache of %s %s was not filled within %s: %w", crd.Name, v.Name, crdWait, err)
			case <-time.After(warmPoll):
			}
		}
	}
	return nil
}

// warm fills the watch caches of mf's CRDs (warmWatchCaches) and logs how
// long it took at V(1).
func (m *Plane) warm(ctx context.Context, in Input, mf *manifests) error {
	began := time.Now()
	if err := warmWatchCaches(ctx, m.cfg, mf.crds); err != nil {
		return err
	}
	in.Log.V(1).Info("watch caches filled", "crds", len(mf.crds), "took", time.Since(began).Round(time.Millisecond).String())
	return nil
}
