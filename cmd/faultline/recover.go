package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/artifacts"
	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/providers/vsphere"
	"github.com/faultline-dev/faultline/session"
)

// recoverOptions are recover's flags.
type recoverOptions struct {
	vc       vcenterFlags
	timeout  time.Duration
	contexts []string
	keyFile  string
	accept   string
	force    []string
	// kubeconfig and context: recover the journal copies that management
	// cluster holds.
	kubeconfig, context string
}

func newRecoverCommand() *cobra.Command {
	o := &recoverOptions{}
	cmd := &cobra.Command{
		Use: "recover [JOURNAL...]",
		Example: `  # every journal under $ARTIFACTS (or _artifacts), and every one recorded
  faultline recover
  # one crashed run's journal, against the vCenter it went to
  faultline recover _artifacts/power-off-worker-20261127-101500/journal.jsonl --allow-vcenter vc.example.com
  # on another host: the journals a management cluster holds copies of
  faultline recover --kubeconfig mgmt.kubeconfig --allow-context mgmt --journal-key runner.key`,
		Short: "Undo the faults a crashed or killed run left in place",
		Long: `Replay the pending undo entries of journals: each argument is a journal
file, or a folder searched at any depth for journal.jsonl files. With no
argument, every journal.jsonl under $ARTIFACTS (or _artifacts) is read, and
every journal this user's faultline recorded writing (beside the journal
key), wherever --artifacts put it. A journal that a live faultline still
writes (its run holds it locked until it ends) is skipped, saying so: that
run undoes its own faults, and two jobs on one runner can each end with a
recover step.

A journal is a file anyone who can write the artifacts folder can edit, so
recover trusts nothing in it that would send credentials. Every entry must
carry the seal (an HMAC) faultline gave it with the journal key, a file kept
outside the artifacts folder ($FAULTLINE_JOURNAL_KEY, or journal.key in the
user's faultline configuration folder, mode 0600). The vCenter or context a
fault went to must be allowed again (--allow-vcenter, --allow-context, or
their environment variables; kind clusters faultline created need none), and
TLS is verified against the identity recorded when the fault was injected:
vCenter's certificate thumbprint, the management cluster's server and CA. A
journal that fails any of these is refused whole (naming the file and
line) before anything of it is undone or any login is tried for it; the
other journals are recovered, and recover then exits 2. To recover on another
host, pass the key of the host that wrote the journals with --journal-key;
--vcenter-url overrides the URL a journal records.

A run against a Cluster API management cluster also copies its journal
there (a Secret faultline-journal-ID in the namespace of the Clusters it
faults), and deletes the copy once every fault is undone. With --kubeconfig
(and --context), recover reads the copies that cluster holds instead of
local journals, from any host: it needs the key of the host that ran the
faults (--journal-key), reaches the cluster through the kubeconfig given as
long as it is the server and CA the journal recorded, and then deletes each
copy it recovered whole, or writes back what it recorded.

vCenter credentials come from the environment (GOVC_USERNAME, GOVC_PASSWORD)
or the flags; the journal only records where the vCenter is.`,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	o.vc.register(cmd.Flags(), true)
	o.vc.registerGuest(cmd.Flags())
	cmd.Flags().StringSliceVar(&o.contexts, "allow-context", nil, "kubeconfig context (kind-NAME for a kind cluster faultline did not create) whose faults may be undone; repeatable (also $"+session.EnvAllowedContexts+")")
	cmd.Flags().StringVar(&o.keyFile, "journal-key", "", "the key the journals were sealed with (default $"+engine.EnvJournalKey+", or journal.key in the user's faultline configuration folder); another host's, to recover its journals here")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	cmd.Flags().StringVar(&o.accept, "accept-thumbprint", "", "after vCenter's certificate was renewed: the new certificate's thumbprint, exactly as the refusal shows it, to trust instead of the one the journal recorded")
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "recover the journal copies this management cluster holds (a run killed with its host), not local journals")
	cmd.Flags().StringVar(&o.context, "context", "", "the --kubeconfig context (default its current one)")
	cmd.Flags().StringSliceVar(&o.force, "force-entry", nil, "FILE:LINE of a pending fault to undo although its journal's lines are not where faultline wrote them (a journal moved or copied since); of that journal only the entries named are undone; repeatable")
	return cmd
}

func recoverJournals(ctx context.Context, cmd *cobra.Command, in engine.RecoverInput, conns *session.Reconnector) error {
	out := cmd.OutOrStdout()
	// One login per vCenter, however many faults the journals hold.
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := conns.Close(cctx); err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "faultline:", err)
		}
	}()
	in.Check, in.Reconnect = conns.Check, conns.Reconnect
	in.Note = func(s string) { fmt.Fprintln(cmd.ErrOrStderr(), "recover: NOTE:", s) }
	in.Report = func(r engine.Recovered) {
		switch {
		case r.Err != nil:
			fmt.Fprintf(out, "%s: %s %s: FAILED: %v\n", r.Journal, r.Entry.FaultID, r.Entry.Kind, r.Err)
		case r.Why != "":
			fmt.Fprintf(out, "%s: %s %s: %s (%s): %s\n", r.Journal, r.Entry.FaultID, r.Entry.Kind, r.Result, r.Entry.Undo.Action, r.Why)
		default:
			fmt.Fprintf(out, "%s: %s %s: %s (%s)\n", r.Journal, r.Entry.FaultID, r.Entry.Kind, r.Result, r.Entry.Undo.Action)
		}
	}
	sum, err := engine.Recover(ctx, in)
	refused := errors.Is(err, engine.ErrBadJournal) || errors.Is(err, engine.ErrUntrustedJournal)
	if err != nil && !refused {
		return infraErr(err)
	}
	read := len(in.Journals) - sum.Skipped - sum.Refused
	switch {
	case sum.Pending == 0 && sum.Skipped+sum.Refused > 0:
		fmt.Fprintf(out, "nothing recovered: no pending faults in %d journal(s); %d skipped, their runs still run; %d refused\n", read, sum.Skipped, sum.Refused)
	case sum.Pending == 0:
		fmt.Fprintf(out, "nothing to recover: no pending faults in %d journal(s)\n", len(in.Journals))
	case sum.Failed > 0:
		err = errors.Join(err, fmt.Errorf("%d of %d pending faults could not be undone; they stay pending", sum.Failed, sum.Pending))
	}
	switch {
	case refused:
		// The journals that could be trusted were recovered first.
		return usageErr("%d of %d journal(s) refused, nothing of them undone:\n%v", sum.Refused, len(in.Journals), err)
	case err != nil:
		return infraErr(err)
	}
	return nil
}

// run recovers the journals args name (or $ARTIFACTS's).
func (o *recoverOptions) run(cmd *cobra.Command, args []string) error {
	// Every flag is checked before anything is looked for.
	if o.timeout <= 0 {
		return usageErr("--timeout %s: expected a positive duration such as 10m", o.timeout)
	}
	if o.accept != "" {
		if err := vsphere.CheckThumbprint(o.accept); err != nil {
			return usageErr("--accept-thumbprint: %v", err)
		}
	}
	in := engine.RecoverInput{Force: o.force}
	if o.keyFile != "" {
		var err error
		if in.Key, err = engine.LoadJournalKey(o.keyFile, false); err != nil {
			return usageErr("--journal-key: %v", err)
		}
		in.Heads = engine.JournalHeads(o.keyFile)
	}
	if o.kubeconfig != "" {
		if len(args) > 0 {
			return usageErr("--kubeconfig recovers the journal copies the cluster holds: give it no JOURNAL (%s)", strings.Join(args, " "))
		}
		return o.recoverCopies(cmd, in)
	}
	if o.context != "" {
		return usageErr("--context %s: it names a context of --kubeconfig, which is not given", o.context)
	}
	roots := args
	var recorded []string
	if len(roots) == 0 {
		// $ARTIFACTS, and every journal this user's faultline recorded
		// writing, wherever --artifacts put it.
		if _, err := os.Stat(artifacts.Root()); err == nil {
			roots = []string{artifacts.Root()}
		}
		heads := in.Heads
		if heads == "" {
			path, err := engine.JournalKeyPath()
			if err != nil {
				return infraErr(err)
			}
			heads = engine.JournalHeads(path)
		}
		var err error
		if recorded, err = engine.RecordedJournals(heads); err != nil {
			return infraErr(err)
		}
		if len(roots) == 0 && len(recorded) == 0 {
			fmt.Fprintf(cmd.OutOrStdout(), "nothing to recover: %s does not exist and no journal is recorded in %s\n", artifacts.Root(), heads)
			return nil
		}
	}
	var err error
	if in.Journals, err = engine.FindJournals(roots); err != nil {
		return usageErr("find journals: %v", err)
	}
	in.Journals = mergeJournals(in.Journals, recorded)
	where := strings.Join(roots, ", ")
	if len(recorded) > 0 {
		where = strings.TrimPrefix(where+" and the journals recorded beside the journal key", " and ")
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "recover: %d journal(s) under %s\n", len(in.Journals), where)
	ctx, stop := notifyContext(cmd.Context())
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	vcfg, err := o.vc.sessionConfig(logr.Discard())
	if err != nil {
		return err
	}
	conns := &session.Reconnector{VCenter: vcfg, URL: o.vc.url, Contexts: o.contexts, AcceptThumbprint: o.accept}
	return recoverJournals(ctx, cmd, in, conns)
}

// recoverCopies recovers the journal copies of the management cluster
// --kubeconfig reaches, and writes them back.
func (o *recoverOptions) recoverCopies(cmd *cobra.Command, in engine.RecoverInput) error {
	ctx, stop := notifyContext(cmd.Context())
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	cache, err := os.UserCacheDir()
	if err != nil {
		return infraErr(err)
	}
	m := session.ManagementConfig{Kubeconfig: o.kubeconfig, Context: o.context, Allowed: o.contexts}
	copies, err := session.FetchJournalCopies(ctx, m, filepath.Join(cache, "faultline", "journal-copies"))
	if err != nil {
		return err
	}
	if len(copies.Paths) == 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "nothing to recover: the cluster of %s holds no journal copy\n", o.kubeconfig)
		return nil
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "recover: %d journal copies from the cluster of %s\n", len(copies.Paths), o.kubeconfig)
	in.Journals, in.Origins = copies.Paths, copies.Origins
	if in.Key == nil {
		path, err := engine.JournalKeyPath()
		if err != nil {
			return infraErr(err)
		}
		if in.Key, err = engine.LoadJournalKey(path, false); err != nil {
			return usageErr("the journal copies are sealed with the key of the host that ran them: --journal-key FILE (%v)", err)
		}
		in.Heads = engine.JournalHeads(path)
	}
	vcfg, err := o.vc.sessionConfig(logr.Discard())
	if err != nil {
		return err
	}
	conns := &session.Reconnector{VCenter: vcfg, URL: o.vc.url, Contexts: o.contexts, AcceptThumbprint: o.accept, Kubeconfig: o.kubeconfig, Context: o.context}
	err = recoverJournals(ctx, cmd, in, conns)
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer wcancel()
	if werr := copies.WriteBack(wctx, in.Key, in.Heads); werr != nil {
		return errors.Join(err, infraErr(fmt.Errorf("write the recovered journals back to the cluster: %w", werr)))
	}
	return err
}

// mergeJournals is found and recorded without a journal twice (the same
// file named by two paths counts once).
func mergeJournals(found, recorded []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, j := range append(found, recorded...) {
		abs, err := filepath.Abs(j)
		if err != nil {
			abs = j
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		if !seen[abs] {
			seen[abs] = true
			out = append(out, j)
		}
	}
	return out
}
