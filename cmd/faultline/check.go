package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/faultline-dev/faultline/providers/session"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/check"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
	"github.com/faultline-dev/faultline/providers/kind"
	"github.com/faultline-dev/faultline/providers/lab"
)

type checkOptions struct {
	cluster clusterFlags
	// reportCM is --report-configmap, namespace/name.
	reportCM string
	// workload is the workload half of a pair of kubeconfigs, or the only
	// cluster (a kind cluster) when no management cluster is named.
	workload clusterFlags
	// kindCluster names a kind cluster to check as workload alone.
	kindCluster string
	// only limits the check to one Cluster, namespace/name.
	only    string
	vcenter vcenterFlags
	lab     labFlags
	output  string
	timeout time.Duration
}

// checkedCluster is one workload cluster's findings.
type checkedCluster struct {
	Cluster  string          `json:"cluster"`
	Findings []check.Finding `json:"findings"`
	// Skipped says why the cluster was not checked (no Machine to reach it
	// through).
	Skipped string `json:"skipped,omitempty"`
}

func newCheckCommand() *cobra.Command {
	var o checkOptions
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Find the seeds' latent hazards in a cluster, read-only",
		Long: `Read a Cluster API management cluster and its workload clusters and report
the hazards the seeds show were visible before they struck: admission webhooks
that would block the CNI pod of a new node (seed 000), Calico IP pools too
small for the nodes (and an upgrade's surge) or with a block size other than
the nodes' pod CIDR prefix (seed 001), etcd members and control planes out of
step and remediation that loops (seed 003), quorum margin (seed 002), and,
with a vCenter (--vcenter-url or $GOVC_URL), VMs no Machine owns and Machines
without a VM. Every client refuses writes.

With --kubeconfig or --context it checks that management cluster; with
neither it starts the embedded lab (one control plane, two workers) and
checks it, as a demo and a self-test.

Exit codes: 0 nothing at error severity, 1 an error finding, 2 invalid input,
3 the cluster could not be reached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := notifyContext(cmd.Context())
			defer stop()
			err := o.run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
			var ee *exitError
			if errors.As(err, &ee) && ee.code == engine.ExitInfra {
				// CI reads the file: a cluster that could not be checked
				// is an error case in it, never an empty file; and the
				// kept report says so too.
				if o.output == "junit" {
					err = errors.Join(err, writeUnreachableJUnit(cmd.OutOrStdout(), err))
				}
				if o.reportCM != "" && !strings.HasPrefix(err.Error(), "--report-configmap") {
					var junit bytes.Buffer
					if werr := writeUnreachableJUnit(&junit, err); werr == nil {
						err = errors.Join(err, o.keepData(map[string]string{"junit.xml": junit.String(), "summary.txt": "not checked: " + err.Error() + "\n"}))
					}
				}
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.cluster.kubeconfig, "kubeconfig", "", "kubeconfig of the Cluster API management cluster (default: start the embedded lab)")
	fs.StringVar(&o.cluster.context, "context", "", "kubeconfig context to use")
	fs.StringVar(&o.workload.kubeconfig, "workload-kubeconfig", "", "kubeconfig of the workload cluster: with --kubeconfig, used instead of Cluster API's kubeconfig Secret (pair it with --cluster); alone, checks that cluster without a management cluster (kind, or a cluster Cluster API does not manage)")
	fs.StringVar(&o.workload.context, "workload-context", "", "context of --workload-kubeconfig (default its current context)")
	fs.StringVar(&o.kindCluster, "kind-cluster", "", "check the kind cluster of that name (one 'faultline kind up' created, or kind's own), as --workload-kubeconfig alone does")
	fs.StringVar(&o.only, "cluster", "", "check only this Cluster, namespace/name")
	fs.StringVar(&o.reportCM, "report-configmap", "", "also keep the report (junit.xml, summary.txt) in this ConfigMap, namespace/name, of the cluster checked (faultline's CronJob does)")
	o.vcenter.register(fs, false)
	o.lab.register(fs)
	fs.StringVarP(&o.output, "output", "o", "text", "text, json or junit")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up reading the clusters after this long (exit 3)")
	return cmd
}

func (o *checkOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	switch o.output {
	case "text", "json", "junit":
	default:
		return usageErr("--output %q: expected text, json or junit", o.output)
	}
	if o.timeout <= 0 {
		return usageErr("--timeout %s: expected a positive duration such as 2m", o.timeout)
	}
	if o.reportCM != "" && strings.Count(o.reportCM, "/") != 1 {
		return usageErr("--report-configmap %q: expected namespace/name", o.reportCM)
	}
	if o.only != "" && strings.Count(o.only, "/") != 1 {
		return usageErr("--cluster %q: expected namespace/name", o.only)
	}
	if o.workload.context != "" && o.workload.kubeconfig == "" {
		return usageErr("--workload-context needs --workload-kubeconfig")
	}
	if o.kindCluster != "" {
		if o.workload.kubeconfig != "" || o.cluster.kubeconfig != "" || o.cluster.context != "" {
			return usageErr("--kind-cluster names the cluster to check: leave out --kubeconfig, --context and --workload-kubeconfig")
		}
		state, err := kind.DefaultState()
		if err != nil {
			return infraErr(err)
		}
		path, cleanup, err := kind.KubeconfigFile(state, o.kindCluster)
		if err != nil {
			return &exitError{code: engine.ExitInfra, err: fmt.Errorf("--kind-cluster %s: %w", o.kindCluster, err)}
		}
		defer cleanup()
		o.workload.kubeconfig = path
	}
	var c, wc client.Client
	var p *capi.Provider
	opts := []capi.Option{capi.WithReadOnly()}
	var workloadName string
	if o.workload.kubeconfig != "" {
		o.workload.flag = "--workload-kubeconfig"
		var err error
		if wc, _, workloadName, err = o.workload.client(); err != nil {
			return err
		}
		opts = append(opts, capi.WithWorkloadClient(wc))
	}
	vcfg, err := o.vcenter.merged()
	if err != nil {
		return err
	}
	// The embedded lab only when nothing names a cluster: $KUBECONFIG
	// names one as --kubeconfig does (as for kubectl and clusterctl), and
	// a vCenter is the one behind a management cluster.
	named := o.cluster.kubeconfig != "" || o.cluster.context != "" || os.Getenv("KUBECONFIG") != "" || session.InPod()
	target := "the embedded lab"
	switch {
	case !named && workloadName != "":
		if o.vcenter.url != "" {
			return usageErr("--vcenter-url: the workload checks read no vCenter; leave it out, or name the management cluster with --kubeconfig")
		}
		return o.checkWorkloadOnly(ctx, stdout, workloadName, capi.New(nil, opts...))
	case !named && vcfg.URL != "":
		return usageErr("%s names vCenter %s, but no management cluster is named: give its kubeconfig with --kubeconfig, --context or $KUBECONFIG (without any of them check starts the embedded lab, which has a vCenter of its own)", vcenterSource(o.vcenter), vcfg.URL)
	case !named:
		if o.reportCM != "" {
			return usageErr("--report-configmap keeps the report in a cluster: name one with --kubeconfig (the embedded lab goes away with the run)")
		}
		log := newLogger(stderr, 0)
		labCfg, err := o.lab.config(log, lab.ClusterSpec{Name: lab.ClusterName, LabSpec: scenario.LabSpec{ControlPlanes: 1, Workers: 2}})
		if err != nil {
			return err
		}
		s, err := session.Open(ctx, session.Config{Provider: session.ProviderLab, Lab: labCfg, Log: log, Out: stderr})
		if err != nil {
			return sessionErr(err)
		}
		defer func() {
			if err := s.Close(context.WithoutCancel(ctx)); err != nil {
				fmt.Fprintln(stderr, "lab: stop:", err)
			}
		}()
		c = s.Lab.Client()
		p = capi.New(c, append(opts, capi.WithVCenter(s.Lab.VCenter()))...)
	default:
		cfg := session.Config{
			Provider:   session.ProviderCAPI,
			Management: session.ManagementConfig{Kubeconfig: o.cluster.kubeconfig, Context: o.cluster.context, ReadOnly: true, Workload: wc, Cluster: o.only},
			Log:        newLogger(stderr, 0),
			Out:        stderr,
		}
		// The inventory check reads the vCenter, when one is named.
		if vcfg.URL != "" {
			cfg.VCenter = session.VCenterConfig{Config: vcfg}
		}
		s, err := session.Open(ctx, cfg)
		if err != nil {
			return sessionErr(err)
		}
		defer func() { _ = s.Close(context.WithoutCancel(ctx)) }()
		c, p, target = s.Client, s.Provider.(*capi.Provider), "context "+s.Context
		if s.Context == capi.InClusterContext {
			var list clusterv1.ClusterList
			if err := c.List(ctx, &list, client.Limit(1)); meta.IsNoMatchError(err) {
				// No Cluster API in the cluster faultline runs in: the
				// workload rules, on it.
				return o.checkWorkloadOnly(ctx, stdout, capi.InClusterContext, capi.New(nil, append(opts, capi.WithWorkloadClient(c))...))
			}
		}
	}
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	checked, err := checkClusters(rctx, c, p, o.only)
	if err != nil {
		return infraErr(fmt.Errorf("check %s: %w", target, err))
	}
	if o.only != "" && len(checked) == 0 {
		return usageErr("--cluster %s: %s has no such Cluster", o.only, target)
	}
	if workloadName != "" && len(checked) > 1 {
		return usageErr("--workload-kubeconfig pairs with one Cluster, and the management cluster has %d: name it with --cluster", len(checked))
	}
	return o.report(stdout, checked)
}

// vcenterSource names where the vCenter URL came from, for errors.
func vcenterSource(f vcenterFlags) string {
	if f.url != "" {
		return "--vcenter-url"
	}
	return "$GOVC_URL"
}

// checkWorkloadOnly checks one cluster with no management cluster: the
// webhook and Calico checks.
func (o *checkOptions) checkWorkloadOnly(ctx context.Context, stdout io.Writer, name string, p *capi.Provider) error {
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	findings, err := check.RunWorkloadChecks(rctx, p, providers.Object{Kind: "Cluster", Name: name, Attributes: map[providers.Attribute]string{}})
	if err != nil {
		return infraErr(fmt.Errorf("check workload context %s: %w", name, err))
	}
	sortFindings(findings)
	return o.report(stdout, []checkedCluster{{Cluster: "context " + name, Findings: findings}})
}

// report writes the findings, and keeps them in --report-configmap; an
// error finding is exit code 1.
func (o *checkOptions) report(stdout io.Writer, checked []checkedCluster) error {
	if err := writeChecks(stdout, o.output, checked); err != nil {
		return err
	}
	if o.reportCM != "" {
		if err := o.keepReport(checked); err != nil {
			return infraErr(fmt.Errorf("--report-configmap %s: %w", o.reportCM, err))
		}
	}
	for _, cc := range checked {
		for _, f := range cc.Findings {
			if f.Severity == "error" {
				return exitCode(engine.ExitFail)
			}
		}
	}
	return nil
}

// checkClusters runs the checks on every workload cluster, reached
// through one of its Machines.
func checkClusters(ctx context.Context, c client.Client, p *capi.Provider, only string) ([]checkedCluster, error) {
	var clusters clusterv1.ClusterList
	if err := c.List(ctx, &clusters); err != nil {
		return nil, fmt.Errorf("list Clusters: %w", err)
	}
	out := make([]checkedCluster, 0, len(clusters.Items))
	for _, cl := range clusters.Items {
		key := cl.Namespace + "/" + cl.Name
		if only != "" && key != only {
			continue
		}
		machines, err := p.Resolve(ctx, providers.Selector{Cluster: key})
		if err != nil {
			return nil, err
		}
		if len(machines) == 0 {
			out = append(out, checkedCluster{Cluster: key, Skipped: "no Machine yet"})
			continue
		}
		findings, err := check.RunChecks(ctx, p, machines[0])
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", key, err)
		}
		sortFindings(findings)
		out = append(out, checkedCluster{Cluster: key, Findings: findings})
	}
	return out, nil
}

// sortFindings puts errors first, then warnings, then info.
func sortFindings(findings []check.Finding) {
	sort.SliceStable(findings, func(i, j int) bool { return severityRank(findings[i].Severity) < severityRank(findings[j].Severity) })
}

func severityRank(s string) int {
	switch s {
	case "error":
		return 0
	case "warning":
		return 1
	}
	return 2
}

func writeChecks(w io.Writer, format string, checked []checkedCluster) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"clusters": checked})
	case "junit":
		return writeChecksJUnit(w, checked)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, cc := range checked {
		switch {
		case cc.Skipped != "":
			fmt.Fprintf(tw, "cluster %s: not checked (%s)\n", cc.Cluster, cc.Skipped)
		case len(cc.Findings) == 0:
			fmt.Fprintf(tw, "cluster %s: no finding\n", cc.Cluster)
		case len(cc.Findings) == 1:
			fmt.Fprintf(tw, "cluster %s: 1 finding\n", cc.Cluster)
		default:
			fmt.Fprintf(tw, "cluster %s: %d findings\n", cc.Cluster, len(cc.Findings))
		}
		for _, f := range cc.Findings {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Severity, f.ID, f.Message)
			fmt.Fprintf(tw, "  \tfix\t%s\n", f.Fix)
		}
	}
	return tw.Flush()
}

// maxReport bounds a report ConfigMap's data, under the API's 1 MiB.
const maxReport = 900 << 10

// keepReport writes the findings as JUnit (junit.xml) and text
// (summary.txt) into the ConfigMap --report-configmap names, creating or
// replacing it, through the cluster's own client (check reads through a
// read-only one).
func (o *checkOptions) keepReport(checked []checkedCluster) error {
	var junit, text bytes.Buffer
	if err := writeChecksJUnit(&junit, checked); err != nil {
		return err
	}
	if err := writeChecks(&text, "text", checked); err != nil {
		return err
	}
	data := map[string]string{"junit.xml": junit.String(), "summary.txt": text.String()}
	if junit.Len()+text.Len() > maxReport {
		data["junit.xml"] = ""
		data["summary.txt"] = truncate(text.String(), maxReport) + "\n(truncated: the report is larger than a ConfigMap holds)"
	}
	return o.keepData(data)
}

// keepData creates or replaces the report ConfigMap with data.
func (o *checkOptions) keepData(data map[string]string) error {
	ns, name, _ := strings.Cut(o.reportCM, "/")
	c, _, _, err := session.ManagementClient(o.cluster.config(), "--kubeconfig")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app.kubernetes.io/name": "faultline"}}}
	_, err = controllerutil.CreateOrUpdate(ctx, c, cm, func() error {
		cm.Data = data
		cm.Data["checkedAt"] = time.Now().UTC().Format(time.RFC3339)
		return nil
	})
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// writeUnreachableJUnit is check's JUnit when it could not check at all:
// one suite with an error case saying why.
func writeUnreachableJUnit(w io.Writer, err error) error {
	return artifacts.WriteJUnit(w, artifacts.JUnitSuites{Suites: []artifacts.JUnitSuite{{
		Name: "faultline check", Tests: 1, Errors: 1,
		Cases: []artifacts.JUnitCase{{Name: "reach the cluster", Error: &artifacts.JUnitFailure{Message: err.Error()}}},
	}}})
}

// writeChecksJUnit writes one suite per cluster and one case per rule:
// an error finding fails its case; warnings and info are its output.
func writeChecksJUnit(w io.Writer, checked []checkedCluster) error {
	ids := make([]string, 0, len(check.FindingIDs))
	for id := range check.FindingIDs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var doc artifacts.JUnitSuites
	for _, cc := range checked {
		s := artifacts.JUnitSuite{Name: "faultline check " + cc.Cluster}
		for _, id := range ids {
			jc := artifacts.JUnitCase{Name: id}
			var errs, notes []string
			for _, f := range cc.Findings {
				if f.ID != id {
					continue
				}
				line := f.Severity + ": " + f.Message + "\nfix: " + f.Fix
				if f.Severity == "error" {
					errs = append(errs, line)
				} else {
					notes = append(notes, line)
				}
			}
			if len(errs) > 0 {
				jc.Failure = &artifacts.JUnitFailure{Message: fmt.Sprintf("%d error findings", len(errs)), Text: strings.Join(errs, "\n\n")}
				s.Failures++
			}
			jc.Output = strings.Join(notes, "\n\n")
			s.Cases = append(s.Cases, jc)
		}
		s.Tests = len(s.Cases)
		doc.Suites = append(doc.Suites, s)
	}
	return artifacts.WriteJUnit(w, doc)
}
