package management

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// Input is what Start needs.
type Input struct {
	// Assets is the folder of kube-apiserver and etcd (FindAssets); Dir
	// the lab's folder, which keeps their data.
	Assets, Dir string
	Profile     labconfig.Profile
	// Stack is the release the controllers are (the zero Stack is the
	// default); a stack not compiled in must be built (Build).
	Stack labconfig.Stack
	// VCUser and VCPass are CAPV's vCenter credentials.
	VCUser, VCPass string
	Log            logr.Logger
}

// stopTimeout bounds the stop of the lab's kube-apiserver and etcd.
const stopTimeout = time.Second

// Start starts envtest, installs the stack's CRDs and webhooks, and runs
// its controllers until Stop.
func Start(ctx context.Context, in Input) (*Plane, error) {
	if in.Stack == (labconfig.Stack{}) {
		in.Stack = labconfig.DefaultStack()
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	m := &Plane{scheme: scheme, stack: in.Stack}
	mf, err := m.manifests(in)
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		Scheme:                   scheme,
		BinaryAssetsDirectory:    in.Assets,
		CRDInstallOptions:        envtest.CRDInstallOptions{CRDs: mf.crds},
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	if in.Stack.Compiled {
		// envtest points the CRDs' conversions and the webhooks at this
		// process's webhook server.
		env.CRDInstallOptions.Scheme = scheme
		env.WebhookInstallOptions = envtest.WebhookInstallOptions{
			MutatingWebhooks:    mf.mutating,
			ValidatingWebhooks:  mf.validating,
			LocalServingHost:    "127.0.0.1",
			LocalServingCertDir: filepath.Join(in.Dir, "webhook-certs"),
		}
	}
	if err := placeControlPlane(env, in); err != nil {
		return nil, err
	}
	m.env = env
	if m.cfg, err = env.Start(); err != nil {
		return nil, fmt.Errorf("start the management cluster (kube-apiserver and etcd from %s): %w", in.Assets, err)
	}
	if in.Stack.Compiled {
		err = m.setup(ctx, scheme, mf, in)
	} else {
		err = errors.Join(m.startManagers(ctx, in, mf), m.startClient(ctx, in))
	}
	if err != nil {
		return nil, errors.Join(err, m.Stop())
	}
	return m, nil
}

// manifests are the stack's CRDs and webhook configurations: the compiled
// stack's embedded, another's from its build, pointed at its managers.
func (m *Plane) manifests(in Input) (*manifests, error) {
	if in.Stack.Compiled {
		if err := setGates(in.Profile); err != nil {
			return nil, err
		}
		return embeddedManifests()
	}
	dir, err := StackDir(in.Stack)
	if err != nil {
		return nil, err
	}
	if ok, err := Built(in.Stack); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("stack %s is not built in %s: run `faultline lab releases --build %s` (or hack/release-managers.sh %s %s)",
			in.Stack, dir, in.Stack.Name, in.Stack.ClusterAPI, in.Stack.CAPV)
	}
	mf, err := loadManifests(os.DirFS(filepath.Join(dir, "manifests")), dir)
	if err != nil {
		return nil, err
	}
	suffix := ""
	if m.env != nil { // an upgrade: the first stack's managers keep their names
		suffix = "." + in.Stack.Name
	}
	if m.managers, err = newManagers(dir, suffix); err != nil {
		return nil, err
	}
	ca, err := servingCert(filepath.Join(in.Dir, "managers"))
	if err != nil {
		return nil, err
	}
	return mf, mf.pointAt(m.managers, ca)
}

// placeControlPlane keeps etcd's and kube-apiserver's data under the lab
// folder, so a crashed lab leaves one folder to remove, and starts both
// through shims, so they die with this process (shim.go) and `faultline
// lab down` finds them. A lab's data is thrown away: a client's watch
// must not hold its stop (kube-apiserver drains watches for as long as
// they last), so each is killed after stopTimeout.
func placeControlPlane(env *envtest.Environment, in Input) error {
	env.ControlPlaneStopTimeout = stopTimeout // envtest sets each one's from it
	env.ControlPlane.Etcd = &envtest.Etcd{DataDir: filepath.Join(in.Dir, "etcd")}
	env.ControlPlane.APIServer = &envtest.APIServer{CertDir: filepath.Join(in.Dir, "apiserver")}
	var err error
	if env.ControlPlane.Etcd.Path, err = shim(filepath.Join(in.Dir, "bin"), filepath.Join(in.Assets, "etcd")); err != nil {
		return err
	}
	if env.ControlPlane.APIServer.Path, err = shim(filepath.Join(in.Dir, "bin"), filepath.Join(in.Assets, "kube-apiserver")); err != nil {
		return err
	}
	for _, d := range []string{env.ControlPlane.Etcd.DataDir, env.ControlPlane.APIServer.CertDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create lab folder: %w", err)
		}
	}
	return nil
}
