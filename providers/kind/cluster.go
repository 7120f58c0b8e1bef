package kind

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	kindlog "sigs.k8s.io/kind/pkg/log"
)

// ImageRepository is where hack/kind-image.sh tags the node images it
// builds with no registry.
const ImageRepository = "faultline.dev/kind-node"

// UpOptions say what cluster Up creates.
type UpOptions struct {
	Name          string
	ControlPlanes int
	Workers       int
	// Image is the node image; "" takes the newest local
	// faultline.dev/kind-node image.
	Image string
	// State is the folder of faultline's kind records.
	State string
	// Timeout bounds the wait for every Node to be Ready (default 5m).
	Timeout time.Duration
	// Retain keeps the nodes of a cluster kind failed to create, for
	// inspection (kind deletes them otherwise).
	Retain bool
	Docker Docker
	Log    logr.Logger
}

// Validate tells what is wrong with the options, naming the field.
func (o UpOptions) Validate() error {
	var errs []error
	if o.Name == "" {
		errs = append(errs, errors.New("name: required"))
	}
	if o.ControlPlanes < 1 {
		errs = append(errs, fmt.Errorf("controlPlanes: got %d, expected 1 or more", o.ControlPlanes))
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("workers: got %d, expected 0 or more", o.Workers))
	}
	if o.State == "" {
		errs = append(errs, errors.New("state: required (DefaultState gives faultline's folder)"))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: got %s, expected a positive duration", o.Timeout))
	}
	return errors.Join(errs...)
}

// Up creates a kind cluster, sets up its pod network and waits for its
// Nodes to be Ready. The record is written first; on failure the caller
// runs Down.
func Up(ctx context.Context, o UpOptions) (*Provider, *Record, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	if o.Docker == nil {
		o.Docker = ExecDocker{}
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if err := Available(ctx, o.Docker); err != nil {
		return nil, nil, err
	}
	var err error
	if o.Image, err = nodeImage(ctx, o.Docker, o.Image); err != nil {
		return nil, nil, err
	}
	if clusters, err := kindcluster.NewProvider(kindcluster.ProviderWithDocker()).List(); err == nil {
		for _, c := range clusters {
			if c == o.Name {
				return nil, nil, fmt.Errorf("a kind cluster named %s exists already", o.Name)
			}
		}
	}
	dir := filepath.Join(o.State, o.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	quirks, err := DetectQuirks(ctx, o.Docker, o.Image)
	if err != nil {
		return nil, nil, err
	}
	rec := &Record{Name: o.Name, Image: o.Image, Created: time.Now().UTC(), Kubeconfig: KubeconfigPath(o.State, o.Name), Quirks: quirks.String()}
	if _, err := o.Docker.Run(ctx, "network", "inspect", Network); err != nil {
		// faultline makes the kind network itself (kind reuses it): with a
		// subnet given by hand, a partitioned node can get its address
		// back, which docker refuses on a network it chose the subnet of.
		if err := createNetwork(ctx, o.Docker); err != nil {
			return nil, nil, err
		}
		rec.NetworkCreated = true
	}
	if rec.Shim, err = WriteShim(ShimDir(o.State), quirks); err != nil {
		return nil, nil, err
	}
	if rec.Shim != "" && !shimFirst(o.State) {
		return nil, nil, fmt.Errorf("this docker host needs faultline's docker shim (%s) for kind, and kind runs the first docker on PATH: start the process with PATH=%s (faultline and its suites do)", rec.Quirks, ShimPATH(o.State, "$PATH"))
	}
	if err := writeRecord(dir, rec); err != nil {
		return nil, nil, err
	}
	o.Log.Info("creating kind cluster", "name", o.Name, "image", o.Image, "controlPlanes", o.ControlPlanes, "workers", o.Workers, "hostQuirks", rec.Quirks)
	cfg := ClusterConfig(o.ControlPlanes, o.Workers, quirks)
	kp := kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(kindLogger{o.Log}))
	if err := kp.Create(o.Name,
		kindcluster.CreateWithV1Alpha4Config(cfg),
		kindcluster.CreateWithNodeImage(o.Image),
		kindcluster.CreateWithKubeconfigPath(rec.Kubeconfig),
		kindcluster.CreateWithDisplayUsage(false),
		kindcluster.CreateWithDisplaySalutation(false),
		kindcluster.CreateWithRetain(o.Retain),
	); err != nil {
		return nil, rec, fmt.Errorf("create kind cluster %s: %w", o.Name, err)
	}
	p, err := Open(o.Name, rec.Kubeconfig, WithDocker(o.Docker), WithLogger(o.Log))
	if err != nil {
		return nil, rec, err
	}
	if err := p.WaitReady(ctx, o.Timeout); err != nil {
		return nil, rec, err
	}
	return p, rec, nil
}

// createNetwork creates the kind network on the first 172.N.0.0/16 (N from
// 18 to 31) that no docker network and no host address uses.
func createNetwork(ctx context.Context, d Docker) error {
	_, err := CreateNetwork(ctx, d, Network)
	return err
}

// CreateNetwork creates a bridge network named name on the first
// 172.18-31.0.0/16 that no docker network and no host interface uses,
// with masquerading, and returns its subnet. A subnet given by hand lets
// a container keep its address across a disconnect or a restart.
func CreateNetwork(ctx context.Context, d Docker, name string) (netip.Prefix, error) {
	used, err := usedSubnets(ctx, d)
	if err != nil {
		return netip.Prefix{}, err
	}
	for n := 18; n <= 31; n++ {
		_, cidr, _ := net.ParseCIDR(fmt.Sprintf("172.%d.0.0/16", n))
		if overlapsAny(cidr, used) {
			continue
		}
		_, err := d.Run(ctx, "network", "create", "--driver", "bridge",
			"--subnet", cidr.String(), "--gateway", fmt.Sprintf("172.%d.0.1", n),
			"--opt", "com.docker.network.bridge.enable_ip_masquerade=true",
			"--opt", "com.docker.network.driver.mtu=1500", name)
		if err != nil {
			return netip.Prefix{}, err
		}
		return netip.MustParsePrefix(cidr.String()), nil
	}
	return netip.Prefix{}, fmt.Errorf("no free 172.18-31.0.0/16 subnet for docker network %s; create it yourself with docker network create --subnet ... %s", name, name)
}

func usedSubnets(ctx context.Context, d Docker) ([]*net.IPNet, error) {
	var used []*net.IPNet
	out, err := d.Run(ctx, "network", "ls", "--quiet")
	if err != nil {
		return nil, err
	}
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		out, err := d.Run(ctx, append([]string{"network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{end}}"}, ids...)...)
		if err != nil {
			return nil, err
		}
		for _, f := range strings.Fields(string(out)) {
			if _, n, err := net.ParseCIDR(f); err == nil {
				used = append(used, n)
			}
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			used = append(used, n)
		}
	}
	return used, nil
}

func overlapsAny(cidr *net.IPNet, used []*net.IPNet) bool {
	for _, u := range used {
		if cidr.Contains(u.IP) || u.Contains(cidr.IP) {
			return true
		}
	}
	return false
}

// ClusterConfig is the kind configuration faultline creates: no default
// CNI (kindnetd's image is not here; PodNetwork replaces it), and on a
// cgroup v1 host a kubelet told to accept it.
func ClusterConfig(controlPlanes, workers int, q HostQuirks) *v1alpha4.Cluster {
	cfg := &v1alpha4.Cluster{TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"}}
	for i := 0; i < controlPlanes; i++ {
		cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{Role: v1alpha4.ControlPlaneRole})
	}
	for i := 0; i < workers; i++ {
		cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{Role: v1alpha4.WorkerRole})
	}
	cfg.Networking.DisableDefaultCNI = true
	if q.CgroupV1 {
		cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches, "kind: KubeletConfiguration\nfailCgroupV1: false\n")
	}
	v1alpha4.SetDefaultsCluster(cfg)
	return cfg
}

// Open returns a provider over an existing kind cluster. kubeconfig is its
// kubeconfig file; "" asks kind for it.
func Open(name, kubeconfig string, opts ...Option) (*Provider, error) {
	var raw []byte
	if kubeconfig != "" {
		b, err := os.ReadFile(kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig of kind cluster %s: %w", name, err)
		}
		raw = b
	} else {
		s, err := kindcluster.NewProvider(kindcluster.ProviderWithDocker()).KubeConfig(name, false)
		if err != nil {
			return nil, fmt.Errorf("kind cluster %s: %w", name, err)
		}
		raw = []byte(s)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of kind cluster %s: %w", name, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.Timeout = 10 * time.Second
	// The checks read v1 Endpoints, which a real API server answers with a
	// deprecation warning on every poll.
	cfg.WarningHandlerWithContext = rest.NoWarnings{}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("client for kind cluster %s: %w", name, err)
	}
	return New(name, c, append([]Option{WithKubeconfig(kubeconfig)}, opts...)...), nil
}

// WaitReady sets up the pod network once every node has its pod CIDR and
// waits until every Node is Ready, polling every second up to timeout.
func (p *Provider) WaitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := errors.New("not checked yet")
	for {
		if last = p.ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kind cluster %s not ready within %s: %w", p.cluster, timeout, last)
		case <-tick.C:
		}
	}
}

func (p *Provider) ready(ctx context.Context) error {
	if err := p.Network().Ensure(ctx); err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := p.c.List(ctx, &nodes); err != nil {
		return err
	}
	list, err := p.containers(ctx)
	if err != nil {
		return err
	}
	want := 0
	for _, c := range list {
		if c.Role != "external-load-balancer" {
			want++
		}
	}
	var notReady []string
	for _, n := range nodes.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			notReady = append(notReady, n.Name)
		}
	}
	switch {
	case len(nodes.Items) < want:
		return fmt.Errorf("%d of %d Nodes registered", len(nodes.Items), want)
	case len(notReady) > 0:
		return fmt.Errorf("Nodes not Ready: %s", strings.Join(notReady, ", "))
	}
	return nil
}

// Down deletes a kind cluster faultline created and everything it made for
// it: the containers and their volumes (kind), the kind network if it made
// it and nothing else uses it, the shim and the record. A cluster whose
// record exists but whose containers are gone (a crash) is cleaned up too.
func Down(ctx context.Context, state, name string, d Docker, log logr.Logger) error {
	if d == nil {
		d = ExecDocker{}
	}
	dir := filepath.Join(state, name)
	rec, err := readRecord(dir)
	if err != nil {
		return fmt.Errorf("kind cluster %s: faultline has no record of it in %s (it did not create it; delete it with kind): %w", name, state, err)
	}
	kp := kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(kindLogger{log}))
	if err := kp.Delete(name, rec.Kubeconfig); err != nil {
		return fmt.Errorf("delete kind cluster %s: %w", name, err)
	}
	if rec.NetworkCreated {
		out, err := d.Run(ctx, "network", "inspect", "--format", "{{len .Containers}}", Network)
		if err == nil && strings.TrimSpace(string(out)) == "0" && !othersRecorded(state, name) {
			if _, err := d.Run(ctx, "network", "rm", Network); err != nil {
				return err
			}
		}
	}
	log.Info("deleted kind cluster", "name", name)
	return os.RemoveAll(dir)
}

// kindLogger passes kind's messages to a logr.Logger.
type kindLogger struct{ l logr.Logger }

func (k kindLogger) Warn(msg string)                          { k.l.Info(msg) }
func (k kindLogger) Warnf(format string, args ...any)         { k.l.Info(fmt.Sprintf(format, args...)) }
func (k kindLogger) Error(msg string)                         { k.l.Error(nil, msg) }
func (k kindLogger) Errorf(format string, args ...any)        { k.l.Error(nil, fmt.Sprintf(format, args...)) }
func (k kindLogger) V(level kindlog.Level) kindlog.InfoLogger { return kindInfo{k.l.V(int(level))} }

type kindInfo struct{ l logr.Logger }

func (k kindInfo) Info(msg string)                  { k.l.Info(msg) }
func (k kindInfo) Infof(format string, args ...any) { k.l.Info(fmt.Sprintf(format, args...)) }
func (k kindInfo) Enabled() bool                    { return k.l.Enabled() }
