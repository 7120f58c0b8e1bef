package management

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// A manager is one of a stack's manager binaries run as a process of the
// lab, as a management cluster runs it as a Deployment: its webhooks,
// health and metrics on ports of its own, on 127.0.0.1 where the binary
// lets them be placed (see webhookPort).
type manager struct {
	// name is the binary's (capi-manager), provider the manifests' folder
	// whose webhooks and conversions it serves, bin the stack's folder;
	// instance names its shim link and log in the lab: the binary's, or
	// after an upgrade also the stack's (capi-manager.v1.13-processes).
	name, provider, bin, instance string
	// webhookPort, healthPort and metricsPort are its loopback ports.
	// The upstream binaries take a webhook port but no host, so their
	// webhook server listens on every interface of the host.
	webhookPort, healthPort, metricsPort int
	log                                  string
	cmd                                  *exec.Cmd
	exited                               chan struct{}
	err                                  error
}

// newManagers are the four of the stack built in dir, with the provider
// each serves; suffix, when set, ends their instance names.
func newManagers(dir, suffix string) ([]*manager, error) {
	// One call for every port: each listener is held until all are
	// found, so no two managers are given the same port.
	ports, err := freePorts(3 * len(managerBinaries))
	if err != nil {
		return nil, err
	}
	var ms []*manager
	for i, m := range managerBinaries {
		p := ports[3*i:]
		ms = append(ms, &manager{name: m.name, provider: m.provider, bin: dir, instance: m.name + suffix, webhookPort: p[0], healthPort: p[1], metricsPort: p[2]})
	}
	return ms, nil
}

// freePorts are n loopback ports free now.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// managerFiles are what every manager reads: the management cluster's
// kubeconfig, the webhooks' serving certificate, CAPV's credentials.
type managerFiles struct {
	kubeconfig, certDir, credentials string
}

// args are m's flags: those of the release's manager Deployment, with the
// time profile's intervals and feature gates.
func (m *manager) args(f managerFiles, p labconfig.Profile) []string {
	a := []string{
		"--kubeconfig=" + f.kubeconfig,
		"--leader-elect=false",
		"--webhook-port=" + strconv.Itoa(m.webhookPort),
		"--webhook-cert-dir=" + f.certDir,
		"--health-addr=" + loopback(m.healthPort),
		"--diagnostics-address=" + loopback(m.metricsPort), "--insecure-diagnostics",
		"--sync-period=" + p.SyncPeriod.String(),
	}
	// Cluster API's gates; CAPV's are its own, left at their defaults.
	// A gate the release does not have is left out: v1.11 has no
	// ReconcilerRateLimiting (its reconcilers are not rate-limited), and
	// its managers refuse a gate they do not know.
	if g := releaseGates(filepath.Join(m.bin, m.name), p.Gates); len(g) > 0 && m.provider != "infrastructure" {
		a = append(a, "--feature-gates="+gateList(g))
	}
	switch m.name {
	case "capi-manager":
		// The release refuses a conditions grace period under 2m or not
		// above the connection one.
		a = append(a, "--remote-conditions-grace-period="+p.RemoteGrace.String(),
			"--remote-connection-grace-period="+p.RemoteConnectionGrace().String())
	case "kcp-manager":
		a = append(a, "--remote-conditions-grace-period="+p.RemoteGrace.String(),
			"--etcd-dial-timeout-duration="+p.EtcdDialTimeout.String(),
			"--etcd-call-timeout-duration="+p.EtcdCallTimeout.String())
	case "cabpk-manager":
		a = append(a, "--bootstrap-token-ttl=15m")
	case "capv-manager":
		a = append(a, "--credentials-file="+f.credentials)
	}
	return a
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// start starts m through a shim in shimDir (it dies with this process
// and `faultline lab down` finds it), its output in logDir.
func (m *manager) start(shimDir, logDir string, args []string) error {
	link, err := shimAs(shimDir, filepath.Join(m.bin, m.name), m.instance)
	if err != nil {
		return err
	}
	m.log = filepath.Join(logDir, m.instance+".log")
	out, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	m.cmd = exec.Command(link, args...)
	m.cmd.Stdout, m.cmd.Stderr = out, out
	if err := m.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", m.name, err)
	}
	m.exited = make(chan struct{})
	go func() {
		m.err = m.cmd.Wait()
		close(m.exited)
	}()
	return nil
}

// waitReady waits until m answers ready (its webhook server started and
// its caches synced), and fails if it exits first.
func (m *manager) waitReady(ctx context.Context) error {
	url := "http://" + loopback(m.healthPort) + "/readyz"
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-m.exited:
			return fmt.Errorf("%s exited before it was ready (%v); the end of its log %s:\n%s", m.name, m.err, m.log, logEnd(m.log))
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready: %w; its log: %s", m.name, context.Cause(ctx), m.log)
		case <-tick.C:
		}
	}
}

// stop asks m to stop, then kills it after grace.
func (m *manager) stop(grace time.Duration) error {
	if m.cmd == nil || m.exited == nil {
		return nil
	}
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", m.name, err)
	}
	select {
	case <-m.exited:
		return nil
	case <-time.After(grace):
	}
	if err := m.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s: %w", m.name, err)
	}
	<-m.exited
	return nil
}

// stopAll stops ms side by side, as a Deployment's pods are.
func stopAll(ms []*manager) error {
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, mg := range ms {
		wg.Go(func() { errs[i] = mg.stop(managerStopGrace) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// versionLine is how the managers print their version at start: Cluster
// API's `"Starting manager" version="v1.12.5"`, CAPV's `Version: v1.15.2`.
var versionLine = regexp.MustCompile(`(?:version="|Version: )(v[0-9][^" ]*)`)

// version is the version m printed in its log, "" before it did.
func (m *manager) version() string {
	b, err := os.ReadFile(m.log)
	if err != nil {
		return ""
	}
	if s := versionLine.FindSubmatch(b); s != nil {
		return string(s[1])
	}
	return ""
}

// logEnd is the last lines of the log at path, for an error that outlives
// the lab folder the log is in.
func logEnd(path string) string {
	const most = 4096
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	buf := make([]byte, min(st.Size(), most))
	if _, err := f.ReadAt(buf, st.Size()-int64(len(buf))); err != nil {
		return err.Error()
	}
	return strings.TrimRight(string(buf), "\n")
}
