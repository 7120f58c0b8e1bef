package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/faultline-dev/faultline/session"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/check"
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

func newCheckCommand() *cobra.Command {
	var o checkOptions
	cmd := &cobra.Command{
		Use: "check",
		Example: `  faultline check --context mgmt
  faultline check --context mgmt --cluster default/prod-1 -o junit > check.xml
  faultline check --kind-cluster night`,
		Short: "Find the seeds' latent hazards in a cluster, read-only",
		Long: `Read a Cluster API management cluster and its workload clusters and report
the hazards the seeds show were visible before they struck: admission webhooks
that would block the CNI pod of a new node (seed 000), Calico IP pools too
small for the nodes (and an upgrade's surge) or with a block size other than
the nodes' pod CIDR prefix (seed 001), etcd members and control planes out of
step and remediation that loops (seed 003), quorum margin (seed 002), and,
with a vCenter (--vcenter-url or $GOVC_URL), VMs no Machine owns and Machines
without a VM. Every client refuses writes.

With --kubeconfig, --context or $KUBECONFIG (as kubectl and clusterctl take
it), or inside a pod, it checks that management cluster; with none of them
it starts the embedded lab (one control plane, two workers) and checks it,
as a demo and a self-test.

Exit codes: 0 nothing at error severity, 1 an error finding, 2 invalid input,
3 the cluster could not be reached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := notifyContext(cmd.Context())
			defer stop()
			err := o.run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
			var ee *exitError
			if errors.As(err, &ee) && ee.code == exitInfra {
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
	fs.StringVar(&o.cluster.kubeconfig, "kubeconfig", "", "kubeconfig of the Cluster API management cluster (default $KUBECONFIG; with neither, and no --context, check starts the embedded lab)")
	fs.StringVar(&o.cluster.context, "context", "", "kubeconfig context to use")
	fs.StringVar(&o.workload.kubeconfig, "workload-kubeconfig", "", "kubeconfig of the workload cluster: with --kubeconfig, used instead of Cluster API's kubeconfig Secret (pair it with --cluster); alone, checks that cluster without a management cluster (kind, or a cluster Cluster API does not manage)")
	fs.StringVar(&o.workload.context, "workload-context", "", "context of --workload-kubeconfig (default its current context)")
	fs.StringVar(&o.kindCluster, "kind-cluster", "", "check the kind cluster of that name (one 'faultline kind up' created, or kind's own), as --workload-kubeconfig alone does")
	fs.StringVar(&o.only, "cluster", "", "check only this Cluster, namespace/name")
	fs.StringVar(&o.reportCM, "report-configmap", "", "also keep the report (junit.xml, summary.txt) in this ConfigMap, namespace/name, of the cluster checked (faultline's CronJob does)")
	o.vcenter.register(fs, false)
	o.lab.register(fs)
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text, json, yaml or junit")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up reading the clusters after this long (exit 3)")
	return cmd
}

// validate checks the flags that need no cluster.
func (o *checkOptions) validate() error {
	if err := checkOutput(o.output, "text", outputJSON, outputYAML, "junit"); err != nil {
		return err
	}
	switch {
	case o.timeout <= 0:
		return usageErr("--timeout %s: expected a positive duration such as 2m", o.timeout)
	case o.reportCM != "" && strings.Count(o.reportCM, "/") != 1:
		return usageErr("--report-configmap %q: expected namespace/name", o.reportCM)
	case o.only != "" && strings.Count(o.only, "/") != 1:
		return usageErr("--cluster %q: expected namespace/name", o.only)
	case o.workload.context != "" && o.workload.kubeconfig == "":
		return usageErr("--workload-context needs --workload-kubeconfig")
	}
	return nil
}

func (o *checkOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.kindCluster != "" {
		if o.workload.kubeconfig != "" || o.cluster.kubeconfig != "" || o.cluster.context != "" {
			return usageErr("--kind-cluster names the cluster to check: leave out --kubeconfig, --context and --workload-kubeconfig")
		}
		path, cleanup, err := session.KindKubeconfig(o.kindCluster)
		if err != nil {
			return &exitError{code: exitInfra, err: fmt.Errorf("--kind-cluster %s: %w", o.kindCluster, err)}
		}
		defer cleanup()
		o.workload.kubeconfig = path
	}
	in := session.CheckInput{Management: o.cluster.config(), Nodes: o.lab.nodes, Log: newLogger(stderr, 0), Out: stderr}
	in.Management.Cluster = o.only
	if o.workload.kubeconfig != "" {
		o.workload.flag = "--workload-kubeconfig"
		var err error
		if in.Workload, _, in.WorkloadName, err = o.workload.client(); err != nil {
			return err
		}
	}
	var err error
	if in.VCenter, err = o.vcenter.merged(); err != nil {
		return err
	}
	// The embedded lab only when nothing names a cluster: $KUBECONFIG
	// names one as --kubeconfig does (as for kubectl and clusterctl), and
	// a vCenter is the one behind a management cluster.
	in.Named = o.cluster.kubeconfig != "" || o.cluster.context != "" || os.Getenv("KUBECONFIG") != "" || session.InPod()
	switch {
	case !in.Named && in.Workload != nil && o.vcenter.url != "":
		return usageErr("--vcenter-url: the workload checks read no vCenter; leave it out, or name the management cluster with --kubeconfig")
	case !in.Named && in.Workload != nil:
	case !in.Named && in.VCenter.URL != "":
		return usageErr("%s names vCenter %s, but no management cluster is named: give its kubeconfig with --kubeconfig, --context or $KUBECONFIG (without any of them check starts the embedded lab, which has a vCenter of its own)", vcenterSource(o.vcenter), in.VCenter.URL)
	case !in.Named && o.reportCM != "":
		return usageErr("--report-configmap keeps the report in a cluster: name one with --kubeconfig (the embedded lab goes away with the run)")
	case !in.Named:
		if in.Lab, err = o.lab.config(in.Log, stderr); err != nil {
			return err
		}
	}
	chk, err := session.OpenCheck(ctx, in)
	if err != nil {
		return sessionErr(err)
	}
	defer func() {
		if err := chk.Close(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintln(stderr, "check: close:", err)
		}
	}()
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	checked, err := chk.Run(rctx, o.only)
	if err != nil {
		return infraErr(err)
	}
	if o.only != "" && len(checked) == 0 {
		return usageErr("--cluster %s: %s has no such Cluster", o.only, chk.Target)
	}
	if in.Workload != nil && len(checked) > 1 {
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

// report writes the findings, and keeps them in --report-configmap; an
// error finding is exit code 1.
func (o *checkOptions) report(stdout io.Writer, checked []session.CheckedCluster) error {
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
				return exitCode(exitFail)
			}
		}
	}
	return nil
}

func writeChecks(w io.Writer, format string, checked []session.CheckedCluster) error {
	switch format {
	case outputJSON, outputYAML:
		return printDoc(w, format, map[string]any{"clusters": checked})
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
func (o *checkOptions) keepReport(checked []session.CheckedCluster) error {
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return session.KeepReport(ctx, o.cluster.config(), o.reportCM, data)
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
func writeChecksJUnit(w io.Writer, checked []session.CheckedCluster) error {
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
