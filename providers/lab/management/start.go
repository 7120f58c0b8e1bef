package management

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
	"github.com/faultline-dev/faultline/providers/lab/leftovers"
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
	// State is the folder of stored management states: "" is $FAULTLINE_STATE's, or
	// faultline/state in the user's cache folder; "off" starts fresh.
	State string
	Log   logr.Logger
	// Warn, when set, is told what the user should know that stops
	// nothing: a stored state discarded, and why.
	Warn func(string)
}

// warn tells in.Warn, when set, and the log.
func (in Input) warn(s string) {
	if in.Warn != nil {
		in.Warn(s)
	}
	in.Log.Info(s)
}

// etcdDir is etcd's data folder in the lab's folder.
func (in Input) etcdDir() string { return filepath.Join(in.Dir, "etcd") }

// webhookCertDir is the compiled stack's webhook server's certificate
// folder in the lab's folder.
func (in Input) webhookCertDir() string { return filepath.Join(in.Dir, "webhook-certs") }

// crdWait bounds the wait for installed CRDs to be served, polled every
// crdPoll. envtest's own default, 10 s, ran out in CI on a loaded 2-core
// machine (a renewed lab's plane, "waiting for CRDs to appear as API
// resources: context deadline exceeded").
const (
	crdWait = time.Minute
	crdPoll = 50 * time.Millisecond
)

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
	if err := m.startControlPlane(in, mf); err != nil {
		return nil, err
	}
	if err := m.warm(ctx, in, mf); err != nil {
		return nil, errors.Join(err, m.Stop())
	}
	if in.Stack.Compiled {
		err = m.setup(ctx, scheme, mf, in)
	} else {
		err = errors.Join(m.startManagers(ctx, in, mf), m.startClient(ctx, in))
	}
	if err == nil {
		err = m.writeInventory(ctx)
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
	if err := Verify(in.Stack); err != nil {
		return nil, err
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
// they last), so kube-apiserver is killed (stopEnv) and etcd is killed
// when it outlives stopTimeout.
func placeControlPlane(env *envtest.Environment, in Input) error {
	env.ControlPlaneStopTimeout = stopTimeout // envtest sets each one's from it
	env.ControlPlane.Etcd = &envtest.Etcd{DataDir: in.etcdDir()}
	env.ControlPlane.APIServer = &envtest.APIServer{CertDir: filepath.Join(in.Dir, "apiserver")}
	var err error
	if env.ControlPlane.Etcd.Path, err = shim(filepath.Join(in.Dir, "bin"), filepath.Join(in.Assets, "etcd")); err != nil {
		return err
	}
	if env.ControlPlane.APIServer.Path, err = shim(filepath.Join(in.Dir, "bin"), filepath.Join(in.Assets, "kube-apiserver")); err != nil {
		return err
	}
	// envtest makes kube-apiserver's certificates only in a folder
	// without them, and a start again (startControlPlane) needs new ones.
	if err := os.RemoveAll(env.ControlPlane.APIServer.CertDir); err != nil {
		return fmt.Errorf("clear kube-apiserver's certificates: %w", err)
	}
	for _, d := range []string{env.ControlPlane.Etcd.DataDir, env.ControlPlane.APIServer.CertDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create lab folder: %w", err)
		}
	}
	return nil
}

// startControlPlane starts kube-apiserver and etcd with mf installed:
// from the stored state when there is one; else fresh, and then it
// stores the state and starts again from it.
func (m *Plane) startControlPlane(in Input, mf *manifests) error {
	root, err := stateRoot(in.State)
	if err != nil {
		return err
	}
	folder := ""
	if root != "" {
		folder = stateFolder(root, in.Assets, mf)
	}
	etcdDir := in.etcdDir()
	if folder != "" && stored(folder) {
		// A state that is not as stored, or does not start, is thrown
		// away, and made again.
		err := verifyDigests(folder)
		if err == nil {
			if err = m.startStored(in, mf, folder, true); err == nil {
				return nil
			}
			err = errors.Join(err, m.stopEnv())
		}
		in.warn(fmt.Sprintf("the stored management state %s is discarded, and this start makes it again: %v", folder, err))
		if err := errors.Join(os.RemoveAll(folder), os.RemoveAll(etcdDir)); err != nil {
			return err
		}
	}
	port := 0
	if folder != "" && in.Stack.Compiled {
		if port, err = statePort(); err != nil {
			return err
		}
	}
	if err := m.startEnv(in, mf, envStart{port: port}); err != nil || folder == "" {
		return err
	}
	// The webhook server's certificate goes with envtest's stop.
	var certs map[string][]byte
	if in.Stack.Compiled {
		if certs, err = readCerts(m.env.WebhookInstallOptions.LocalServingCertDir); err != nil {
			return err
		}
	}
	// etcd's folder is whole once etcd has stopped.
	if err := m.stopEnv(); err != nil {
		return err
	}
	ours, err := storeState(folder, etcdDir, certs, port)
	if err != nil {
		return err
	}
	if !ours {
		// Another start stored it first: its etcd folder goes with its
		// webhook server's certificate and port, not this one's.
		if err := os.RemoveAll(etcdDir); err != nil {
			return err
		}
	}
	in.Log.V(1).Info("stored the management state", "state", folder, "ours", ours)
	return m.startStored(in, mf, folder, !ours)
}

// startStored starts from the state in folder, copied into the lab's
// folder first when copyIn (else it is there already). The compiled
// stack's webhook server takes the state's port and certificate when it
// can, and nothing is installed; else envtest installs mf again, pointed
// at a new one.
func (m *Plane) startStored(in Input, mf *manifests, folder string, copyIn bool) error {
	es := envStart{}
	if copyIn {
		es.state = folder
	}
	if in.Stack.Compiled {
		var why string
		if es.hold, why = holdPort(folder); es.hold == nil {
			in.Log.V(1).Info("the stored state's webhook server cannot serve again; installing the CRDs and webhooks", "why", why)
		}
	}
	err := m.startEnv(in, mf, es)
	if es.hold != nil {
		if err != nil {
			return errors.Join(err, es.hold.release())
		}
		m.hold = es.hold
	}
	m.fromState = err == nil
	return err
}

// envStart is how startEnv starts kube-apiserver and etcd.
type envStart struct {
	// state is a stored state to copy in first.
	state string
	// port is the webhook server's port for a fresh start (0: any).
	port int
	// hold is the stored state's webhook server port, held: its
	// certificate is copied in and nothing is installed.
	hold *portHold
}

// startEnv starts kube-apiserver and etcd as es says and installs a copy
// of mf, unless the stored CRDs and webhooks are served as they are.
func (m *Plane) startEnv(in Input, mf *manifests, es envStart) error {
	mf = mf.deepCopy()
	env := &envtest.Environment{
		Scheme:                   m.scheme,
		BinaryAssetsDirectory:    in.Assets,
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	if es.hold == nil {
		env.CRDInstallOptions = envtest.CRDInstallOptions{CRDs: mf.crds, MaxTime: crdWait, PollInterval: crdPoll}
	}
	if in.Stack.Compiled && es.hold == nil {
		// envtest points the CRDs' conversions and the webhooks at this
		// process's webhook server.
		env.CRDInstallOptions.Scheme = m.scheme
		env.WebhookInstallOptions = envtest.WebhookInstallOptions{
			MutatingWebhooks:    mf.mutating,
			ValidatingWebhooks:  mf.validating,
			LocalServingHost:    "127.0.0.1",
			LocalServingPort:    es.port,
			LocalServingCertDir: in.webhookCertDir(),
		}
	}
	if err := placeControlPlane(env, in); err != nil {
		return err
	}
	if es.state != "" {
		if err := copyTree(es.state, env.ControlPlane.Etcd.DataDir); err != nil {
			return fmt.Errorf("copy the stored management state %s: %w", es.state, err)
		}
	}
	m.env = env
	began := time.Now()
	var err error
	m.cfg, err = env.Start()
	// envtest put its webhook serving key in $TMPDIR, whatever the
	// options said; a lab killed before its Stop leaves it to lab down.
	if d := env.WebhookInstallOptions.LocalServingCertDir; d != "" && filepath.Dir(d) == filepath.Clean(os.TempDir()) {
		err = errors.Join(err, leftovers.Note(in.Dir, d))
	}
	if err != nil {
		return fmt.Errorf("start the management cluster (kube-apiserver and etcd from %s): %w", in.Assets, err)
	}
	if es.state != "" {
		// The stored objects were made when the state was stored; this
		// lab makes them now.
		stamped := time.Now()
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		n, err := restamp(rctx, env.ControlPlane.Etcd.URL.String(), stamped)
		cancel()
		if err != nil {
			// Their ages are what is wrong then, not the lab.
			in.warn(fmt.Sprintf("the management cluster's objects keep the stored state's creation times (kubectl's AGE): %v", err))
		}
		in.Log.V(1).Info("dated the stored objects from this start", "objects", n, "took", time.Since(stamped).Round(time.Millisecond).String())
	}
	if es.hold != nil {
		if err := m.serveStored(in, mf, es.hold); err != nil {
			return err
		}
	}
	in.Log.V(1).Info("kube-apiserver and etcd up with the CRDs and webhooks", "took", time.Since(began).Round(time.Millisecond).String(),
		"fromState", es.state != "" || es.hold != nil, "installed", es.hold == nil)
	return nil
}

// serveStored points the webhook server at the stored state's port and
// certificate, and waits for the stored CRDs to be served.
func (m *Plane) serveStored(in Input, mf *manifests, hold *portHold) error {
	certDir := in.webhookCertDir()
	if err := os.RemoveAll(certDir); err != nil {
		return err
	}
	if err := copyTree(filepath.Join(hold.folder, webhookDir), certDir); err != nil {
		return fmt.Errorf("copy the stored webhook certificate: %w", err)
	}
	// envtest's start made a serving key in $TMPDIR of its own (it does
	// whatever LocalServingCertDir says), which its Stop removes only
	// while the options still name it: removed here, or one such folder
	// stayed behind every lab started from a stored state.
	if err := m.env.WebhookInstallOptions.Cleanup(); err != nil {
		return fmt.Errorf("remove envtest's serving certificate: %w", err)
	}
	m.env.WebhookInstallOptions = envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1", LocalServingPort: hold.port, LocalServingCertDir: certDir}
	opts := envtest.CRDInstallOptions{MaxTime: crdWait, PollInterval: crdPoll}
	if err := envtest.WaitForCRDs(m.cfg, mf.crds, opts); err != nil {
		return fmt.Errorf("the stored CRDs are not served: %w", err)
	}
	return nil
}

// stopEnv stops kube-apiserver and etcd. kube-apiserver is killed at
// once: the lab's data is etcd's, and on SIGTERM kube-apiserver drains its
// clients' watches for longer than stopTimeout, after which envtest killed
// it anyway (1 s of every lab's stop). etcd still stops on SIGTERM, so
// that a stored state's folder is whole. What envtest says of a killed
// process is not an error here: "timeout waiting for process" for one
// that outlived stopTimeout, "process already finished" for kube-apiserver.
func (m *Plane) stopEnv() error {
	if err := killStarted(m.env.ControlPlane.APIServer.Path); err != nil {
		return fmt.Errorf("stop the management cluster: %w", err)
	}
	err := m.env.Stop()
	errs := []error{err}
	if agg, ok := err.(kerrors.Aggregate); ok {
		errs = agg.Errors()
	}
	var kept []error
	for _, e := range errs {
		if e != nil && !errors.Is(e, os.ErrProcessDone) && !strings.Contains(e.Error(), "timeout waiting for process") {
			kept = append(kept, e)
		}
	}
	if len(kept) > 0 {
		return fmt.Errorf("stop the management cluster: %w", errors.Join(kept...))
	}
	return nil
}

// FromState tells whether the management plane started from a stored
// state.
func (m *Plane) FromState() bool { return m.fromState }
