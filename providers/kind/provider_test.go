package kind

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/faultline-dev/faultline/providers"
)

// fakeDocker answers docker commands from a table of the state of a few
// node containers, and records every command.
type fakeDocker struct {
	state map[string]string // container → running, paused, exited
	ip    map[string]string // container → address on the kind network
	files map[string]string // container:path → content (exec cat)
	comms map[string]string // container → its processes' names, a line each
	calls [][]string
}

func newFakeDocker() *fakeDocker {
	return &fakeDocker{
		state: map[string]string{"c-control-plane": "running", "c-control-plane2": "running", "c-worker": "running", "c-external-load-balancer": "running"},
		ip:    map[string]string{"c-control-plane": "172.18.0.2", "c-control-plane2": "172.18.0.3", "c-worker": "172.18.0.4"},
		files: map[string]string{},
		comms: map[string]string{},
	}
}

func (f *fakeDocker) Run(_ context.Context, args ...string) ([]byte, error) {
	f.calls = append(f.calls, args)
	last := args[len(args)-1]
	switch args[0] {
	case "ps":
		var b strings.Builder
		for _, name := range []string{"c-control-plane", "c-control-plane2", "c-external-load-balancer", "c-worker"} {
			b.WriteString("id-" + name + "\t" + name + "\t" + roles[name] + "\t" + f.state[name] + "\n")
		}
		return []byte(b.String()), nil
	case "inspect":
		if _, ok := f.state[last]; !ok {
			return nil, &DockerError{Args: args, Err: errors.New("exit status 1"), Stderr: "Error: No such object: " + last}
		}
		if strings.Contains(args[2], "Networks") {
			return []byte(f.ip[last] + "\n"), nil
		}
		st := f.state[last]
		return []byte(`{"Status":"` + st + `","Running":` + boolJSON(st == "running" || st == "paused") + `,"Paused":` + boolJSON(st == "paused") + "}"), nil
	case "kill", "stop":
		f.state[last] = "exited"
	case "start", "unpause":
		f.state[last] = "running"
	case "pause":
		f.state[last] = "paused"
	case "network":
		if args[1] == "disconnect" {
			delete(f.ip, last)
		} else {
			f.ip[last] = "172.18.0.9"
		}
	case "exec":
		if args[2] == "cat" {
			if c, ok := f.files[args[1]+":"+args[3]]; ok {
				return []byte(c), nil
			}
			return nil, &DockerError{Args: args, Err: errors.New("exit status 1"), Stderr: "No such file"}
		}
		if args[2] == "sh" && strings.Contains(args[4], "/proc/[0-9]*/comm") {
			return []byte(f.comms[args[1]]), nil
		}
		if args[2] == "sh" && strings.Contains(args[4], "printf") {
			f.files[args[1]+":"+args[6]] = args[7]
		}
	}
	return nil, nil
}

var roles = map[string]string{"c-control-plane": "control-plane", "c-control-plane2": "control-plane", "c-worker": "worker", "c-external-load-balancer": "external-load-balancer"}

func boolJSON(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func (f *fakeDocker) ran(verb string) [][]string {
	var out [][]string
	for _, c := range f.calls {
		if c[0] == verb {
			out = append(out, c)
		}
	}
	return out
}

func node(name, cidr string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": name}}, Spec: corev1.NodeSpec{PodCIDR: cidr},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Message: "kubelet is posting ready status"}}}}
}

func newTestProvider(d *fakeDocker) *Provider {
	c := fake.NewClientBuilder().WithObjects(node("c-control-plane", "10.244.0.0/24"), node("c-control-plane2", "10.244.1.0/24"), node("c-worker", "10.244.2.0/24")).Build()
	return New("c", c, WithDocker(d))
}

func names(objs []providers.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Name)
	}
	return out
}

func TestResolve(t *testing.T) {
	t.Parallel()
	p := newTestProvider(newFakeDocker())
	ctx := context.Background()
	all, err := p.Resolve(ctx, providers.Selector{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(all), []string{"c-control-plane", "c-control-plane2", "c-worker"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("all nodes: got %v, want %v (the load balancer is not a node)", got, want)
	}
	cp := all[0]
	if cp.Kind != NodeKind || cp.Attributes[providers.AttrEtcdMembers] != "2" || cp.Attributes[providers.AttrEtcdCluster] != "kind/c" || cp.Attributes[providers.AttrIP] != "172.18.0.2" {
		t.Fatalf("control plane object: %+v", cp)
	}
	if all[2].Attributes[providers.AttrEtcdMembers] != "" {
		t.Fatalf("a worker hosts no etcd member: %+v", all[2])
	}
	workers, _ := p.Resolve(ctx, providers.Selector{Role: "worker"})
	byLabel, _ := p.Resolve(ctx, providers.Selector{NodeLabels: map[string]string{"zone": "c-control-plane2"}})
	other, _ := p.Resolve(ctx, providers.Selector{Cluster: "other"})
	if !reflect.DeepEqual(names(workers), []string{"c-worker"}) || !reflect.DeepEqual(names(byLabel), []string{"c-control-plane2"}) || other != nil {
		t.Fatalf("workers %v, by label %v, other cluster %v", names(workers), names(byLabel), names(other))
	}
	if _, err := p.Resolve(ctx, providers.Selector{MachineDeployment: "md"}); !errors.Is(err, providers.ErrUnsupported) {
		t.Fatalf("a MachineDeployment selector: got %v, want ErrUnsupported", err)
	}
	if _, err := p.Resolve(ctx, providers.Selector{Role: "master"}); err == nil || !strings.Contains(err.Error(), "expected control-plane or worker") {
		t.Fatalf("a bad role: got %v", err)
	}
}

func TestPowerCycle(t *testing.T) {
	t.Parallel()
	d := newFakeDocker()
	p := newTestProvider(d)
	ctx := context.Background()
	w := providers.Object{Kind: NodeKind, Name: "c-worker"}
	steps := []struct {
		do   func() error
		want providers.PowerState
	}{
		{func() error { return p.PowerOff(ctx, w) }, providers.PoweredOff},
		{func() error { return p.PowerOff(ctx, w) }, providers.PoweredOff}, // idempotent: no second kill
		{func() error { return p.PowerOn(ctx, w) }, providers.PoweredOn},
		{func() error { return p.Suspend(ctx, w) }, providers.Suspended},
		{func() error { return p.PowerOn(ctx, w) }, providers.PoweredOn},
	}
	for i, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got, err := p.PowerState(ctx, w); err != nil || got != s.want {
			t.Fatalf("step %d: power state %s (%v), want %s", i, got, err, s.want)
		}
	}
	if n := len(d.ran("kill")); n != 1 {
		t.Fatalf("docker kill ran %d times, want 1", n)
	}
	if len(d.ran("start")) != 1 || len(d.ran("unpause")) != 1 || len(d.ran("pause")) != 1 {
		t.Fatalf("calls: %v", d.calls)
	}
	// A start restores the pod network: every node gets routes again.
	routes := 0
	for _, c := range d.ran("exec") {
		if strings.Contains(strings.Join(c, " "), "ip route replace") {
			routes++
		}
	}
	if routes != 3 {
		t.Fatalf("route commands after start: %d, want one per node (3)", routes)
	}
	if _, err := p.PowerState(ctx, providers.Object{Name: "c-gone"}); !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("a gone node: %v", err)
	}
}

func TestPartition(t *testing.T) {
	t.Parallel()
	d := newFakeDocker()
	p := newTestProvider(d)
	ctx := context.Background()
	objs, _ := p.Resolve(ctx, providers.Selector{NodeName: "c-worker"})
	w := objs[0]
	if err := p.SetNICConnected(ctx, w, "", false); err != nil {
		t.Fatal(err)
	}
	if on, _ := p.NICConnected(ctx, w, ""); on {
		t.Fatal("still connected after disconnect")
	}
	if err := p.SetNICConnected(ctx, w, "", true); err != nil {
		t.Fatal(err)
	}
	connect := d.ran("network")[1]
	if want := []string{"network", "connect", "--ip", "172.18.0.4", Network, "c-worker"}; !reflect.DeepEqual(connect, want) {
		t.Fatalf("reconnect: %v, want %v (the address it had)", connect, want)
	}
	if err := p.SetNICConnected(ctx, w, "Network adapter 2", false); err == nil {
		t.Fatal("a named nic: want an error")
	}
}

func TestStaticPodAndKubelet(t *testing.T) {
	t.Parallel()
	d := newFakeDocker()
	p := newTestProvider(d)
	ctx := context.Background()
	cp := providers.Object{Name: "c-control-plane", Attributes: map[providers.Attribute]string{providers.AttrRole: "control-plane"}}
	if err := p.SetStaticPod(ctx, cp, "etcd", false); err != nil {
		t.Fatal(err)
	}
	if err := p.SetStaticPod(ctx, cp, "etcd", true); err != nil {
		t.Fatal(err)
	}
	execs := d.ran("exec")
	if got := execs[0][len(execs[0])-2:]; !reflect.DeepEqual(got, []string{"/etc/kubernetes/manifests/etcd.yaml", "/etc/kubernetes/faultline-parked/etcd.yaml"}) {
		t.Fatalf("stop moves %v", got)
	}
	if got := execs[1][len(execs[1])-2:]; !reflect.DeepEqual(got, []string{"/etc/kubernetes/faultline-parked/etcd.yaml", "/etc/kubernetes/manifests/etcd.yaml"}) {
		t.Fatalf("start moves %v", got)
	}
	if err := p.SetStaticPod(ctx, providers.Object{Name: "c-worker", Attributes: map[providers.Attribute]string{providers.AttrRole: "worker"}}, "etcd", false); err == nil {
		t.Fatal("a worker has no etcd: want an error")
	}
	if err := p.SetKubelet(ctx, cp, false); err != nil {
		t.Fatal(err)
	}
	if got := d.calls[len(d.calls)-1]; !reflect.DeepEqual(got, []string{"exec", "c-control-plane", "systemctl", "stop", "kubelet"}) {
		t.Fatalf("kubelet stop: %v", got)
	}
}

// A static pod runs when a process of its name (as the kernel keeps it, 15
// characters) runs in the node container.
func TestStaticPodRunning(t *testing.T) {
	t.Parallel()
	d := newFakeDocker()
	d.comms["c-control-plane"] = "systemd\ncontainerd\nkubelet\netcd\nkube-controller\n"
	p := newTestProvider(d)
	ctx := context.Background()
	cp := providers.Object{Name: "c-control-plane", Attributes: map[providers.Attribute]string{providers.AttrRole: "control-plane"}}
	for component, want := range map[string]bool{"etcd": true, "kube-controller-manager": true, "kube-apiserver": false, "kube-scheduler": false} {
		got, err := p.StaticPodRunning(ctx, cp, component)
		if err != nil || got != want {
			t.Errorf("%s running: %t, %v; want %t", component, got, err, want)
		}
	}
	if _, err := p.StaticPodRunning(ctx, providers.Object{Name: "c-worker", Attributes: map[providers.Attribute]string{providers.AttrRole: "worker"}}, "etcd"); err == nil {
		t.Error("a worker has no etcd: want an error")
	}
}

func TestNodeOf(t *testing.T) {
	t.Parallel()
	d := newFakeDocker()
	p := newTestProvider(d)
	st, err := p.NodeOf(context.Background(), providers.Object{Name: "c-worker"})
	if err != nil || st.NodeReady != "True" || st.Gone {
		t.Fatalf("NodeOf: %+v, %v", st, err)
	}
	st, err = p.NodeOf(context.Background(), providers.Object{Name: "c-gone"})
	if err != nil || !st.Gone {
		t.Fatalf("a gone container: %+v, %v", st, err)
	}
}

func TestPodNetworkEnsure(t *testing.T) {
	t.Parallel()
	d := newFakeDocker()
	d.files["c-worker:"+cniConfig] = conflist("10.244.7.0/24") // kept across a restart
	p := newTestProvider(d)
	if err := p.Network().Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := subnetOf([]byte(d.files["c-control-plane2:"+cniConfig])); got != "10.244.1.0/24" {
		t.Fatalf("control-plane2's CNI config has subnet %q, want its Node's pod CIDR", got)
	}
	for _, c := range d.ran("exec") {
		if c[1] == "c-control-plane" && len(c) > 4 && strings.Contains(c[4], "ip route") {
			if got, want := c[len(c)-4:], []string{"10.244.1.0/24", "172.18.0.3", "10.244.7.0/24", "172.18.0.4"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("routes on control-plane: %v, want %v (the worker's from its own config)", got, want)
			}
			return
		}
	}
	t.Fatal("no routes written on c-control-plane")
}
