package session

import (
	"context"
	"fmt"
	"io"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/framework/check"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/lab"
	"github.com/faultline-dev/faultline/providers/vsphere"
)

// CheckInput says what `faultline check` reads. With nothing named (no
// management cluster, no workload cluster, not in a pod) it starts the
// embedded lab and checks it.
type CheckInput struct {
	// Management names the management cluster (ReadOnly is implied); its
	// Cluster, when set, is the only Cluster checked.
	Management ManagementConfig
	// Named says a management cluster is named (a flag, $KUBECONFIG, or
	// the pod faultline runs in); otherwise Workload alone, or the lab.
	Named bool
	// Workload, when set, is the workload cluster's client (WorkloadName
	// its context): with a management cluster, used instead of Cluster
	// API's kubeconfig Secret; alone, the only cluster checked.
	Workload     client.Client
	WorkloadName string
	// VCenter, when its URL is set, is read for the inventory checks.
	VCenter vsphere.Config
	// Lab is the embedded lab's configuration, for a check of nothing
	// named; its Clusters are set here.
	Lab LabConfig
	// Nodes is the lab cluster's spec.lab.nodes ("" simulated).
	Nodes string
	Log   logr.Logger
	Out   io.Writer
}

// CheckedCluster is one workload cluster's findings.
type CheckedCluster struct {
	Cluster  string          `json:"cluster"`
	Findings []check.Finding `json:"findings"`
	// Skipped says why the cluster was not checked (no Machine to reach it
	// through).
	Skipped string `json:"skipped,omitempty"`
}

// Checked is an open check: the provider that reads and what to check.
type Checked struct {
	// Target names what is checked, for errors: "the embedded lab",
	// "context NAME".
	Target string
	// WorkloadOnly: no management cluster, the workload rules on one
	// cluster (Workload, or the pod's cluster without Cluster API).
	WorkloadOnly bool
	client       client.Client
	provider     *capi.Provider
	workloadName string
	closeFn      func(context.Context) error
}

// OpenCheck reaches what in names, read-only: a management cluster, a
// workload cluster alone, or a lab it starts. Close the result.
func OpenCheck(ctx context.Context, in CheckInput) (*Checked, error) {
	opts := []capi.Option{capi.WithReadOnly()}
	if in.Workload != nil {
		opts = append(opts, capi.WithWorkloadClient(in.Workload))
	}
	noop := func(context.Context) error { return nil }
	switch {
	case !in.Named && in.Workload != nil:
		return &Checked{Target: "workload context " + in.WorkloadName, WorkloadOnly: true, provider: capi.New(nil, opts...), workloadName: in.WorkloadName, closeFn: noop}, nil
	case !in.Named && in.VCenter.URL != "":
		return nil, configErr("vCenter %s is named, but no management cluster is: give its kubeconfig with --kubeconfig, --context or $KUBECONFIG (without any of them check starts the embedded lab, which has a vCenter of its own)", in.VCenter.URL)
	case !in.Named:
		in.Lab.Clusters = []lab.ClusterSpec{{Name: lab.ClusterName, LabSpec: scenario.LabSpec{ControlPlanes: 1, Workers: 2, Nodes: in.Nodes}}}
		s, err := Open(ctx, Config{Provider: ProviderLab, Lab: in.Lab, Log: in.Log, Out: in.Out})
		if err != nil {
			return nil, err
		}
		c := s.Lab.Client()
		return &Checked{Target: "the embedded lab", client: c, provider: capi.New(c, append(opts, capi.WithVCenter(s.Lab.VCenter()))...), closeFn: s.Close}, nil
	}
	m := in.Management
	m.ReadOnly, m.Workload = true, in.Workload
	cfg := Config{Provider: ProviderCAPI, Management: m, Log: in.Log, Out: in.Out}
	// The inventory check reads the vCenter, when one is named.
	if in.VCenter.URL != "" {
		cfg.VCenter = VCenterConfig{Config: in.VCenter}
	}
	s, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p, ok := s.Provider.(*capi.Provider)
	if !ok {
		return nil, fmt.Errorf("check context %s: the session's provider is %s, not Cluster API's", s.Context, s.Provider.Name())
	}
	chk := &Checked{Target: "context " + s.Context, client: s.Client, provider: p, closeFn: s.Close}
	if s.Context == capi.InClusterContext {
		var list clusterv1.ClusterList
		if err := s.Client.List(ctx, &list, client.Limit(1)); meta.IsNoMatchError(err) {
			// No Cluster API in the cluster faultline runs in: the
			// workload rules, on it.
			chk.WorkloadOnly, chk.workloadName = true, capi.InClusterContext
			chk.Target = "workload context " + capi.InClusterContext
			chk.provider = capi.New(nil, append(opts, capi.WithWorkloadClient(s.Client))...)
		}
	}
	return chk, nil
}

// Close releases what OpenCheck reached: a lab stops.
func (c *Checked) Close(ctx context.Context) error { return c.closeFn(ctx) }

// Run checks every workload cluster (only, namespace/name, when set),
// each reached through one of its Machines; with WorkloadOnly, the one
// cluster. Findings are sorted errors first.
func (c *Checked) Run(ctx context.Context, only string) ([]CheckedCluster, error) {
	if c.WorkloadOnly {
		findings, err := check.RunWorkloadChecks(ctx, c.provider, providers.Object{Kind: "Cluster", Name: c.workloadName, Attributes: map[providers.Attribute]string{}})
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", c.Target, err)
		}
		sortFindings(findings)
		return []CheckedCluster{{Cluster: "context " + c.workloadName, Findings: findings}}, nil
	}
	var clusters clusterv1.ClusterList
	if err := c.client.List(ctx, &clusters); err != nil {
		return nil, fmt.Errorf("check %s: list Clusters: %w", c.Target, err)
	}
	out := make([]CheckedCluster, 0, len(clusters.Items))
	for _, cl := range clusters.Items {
		key := cl.Namespace + "/" + cl.Name
		if only != "" && key != only {
			continue
		}
		machines, err := c.provider.Resolve(ctx, providers.Selector{Cluster: key})
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", c.Target, err)
		}
		if len(machines) == 0 {
			out = append(out, CheckedCluster{Cluster: key, Skipped: "no Machine yet"})
			continue
		}
		findings, err := check.RunChecks(ctx, c.provider, machines[0])
		if err != nil {
			return nil, fmt.Errorf("check %s: cluster %s: %w", c.Target, key, err)
		}
		sortFindings(findings)
		out = append(out, CheckedCluster{Cluster: key, Findings: findings})
	}
	return out, nil
}

// sortFindings puts errors first, then warnings, then info.
func sortFindings(findings []check.Finding) {
	rank := map[string]int{"error": 0, "warning": 1}
	r := func(s string) int {
		if v, ok := rank[s]; ok {
			return v
		}
		return 2
	}
	sort.SliceStable(findings, func(i, j int) bool { return r(findings[i].Severity) < r(findings[j].Severity) })
}

// KeepReport creates or replaces the ConfigMap report (namespace/name) of
// the cluster m names with data and the time it was checked, through a
// client that may write (the check itself reads through a read-only one).
func KeepReport(ctx context.Context, m ManagementConfig, report string, data map[string]string) error {
	ns, name, _ := strings.Cut(report, "/")
	c, _, _, err := ManagementClient(m, "--kubeconfig")
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app.kubernetes.io/name": "faultline"}}}
	_, err = controllerutil.CreateOrUpdate(ctx, c, cm, func() error {
		cm.Data = data
		cm.Data["checkedAt"] = time.Now().UTC().Format(time.RFC3339)
		return nil
	})
	return err
}
