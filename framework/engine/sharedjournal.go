package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/providers"
)

// A run whose provider keeps journal copies (providers.SharedJournals: a
// Cluster API management cluster) has its journal copied there after
// every append, beside each Cluster it faults, so that a run killed with
// its host leaves its pending faults where `faultline recover
// --kubeconfig` on any machine finds them. The copy goes once the run has
// undone every fault; while any stays in place (an undo failed, --retain)
// it stays too.

// journalCopyTimeout bounds one write of a copy.
const journalCopyTimeout = 30 * time.Second

// shareJournal starts copying the run's journal beside the Clusters of
// objs and returns what deletes the copies at the end of the run. A copy
// that cannot be written (no right to write Secrets there) stops the run
// before any fault.
func (r *run) shareJournal(ctx context.Context, objs []providers.Object) (func(), error) {
	sj, ok := r.in.Provider.(providers.SharedJournals)
	id := r.in.Journal.ID()
	scopes := namespacesOf(objs)
	if !ok || len(scopes) == 0 || strings.HasPrefix(id, "unchained-") {
		return func() {}, nil
	}
	// The undos' done lines are copied after a Ctrl-C too.
	ctx = context.WithoutCancel(ctx)
	put := func(content []byte) error {
		for _, s := range scopes {
			pctx, cancel := context.WithTimeout(ctx, journalCopyTimeout)
			err := sj.PutJournal(pctx, s, id, content)
			cancel()
			if err != nil {
				return err
			}
		}
		return nil
	}
	content, err := r.in.Journal.Content()
	if err == nil {
		err = put(content)
	}
	if err != nil {
		return nil, fmt.Errorf("copy the journal into namespace %s of the management cluster, where recover on another host finds it (nothing was injected; docs/ci.md lists the rights faultline needs): %w", scopes[0], err)
	}
	r.in.Journal.SetMirror(put)
	return func() {
		r.in.Journal.SetMirror(nil)
		if !r.allClosed() {
			r.in.Log.Info("faults remain pending: their journal stays copied in the management cluster", "journal", id)
			return
		}
		for _, s := range scopes {
			dctx, cancel := context.WithTimeout(ctx, journalCopyTimeout)
			if err := sj.DeleteJournal(dctx, s, id); err != nil {
				r.in.Log.Error(err, "deleting the journal's copy")
			}
			cancel()
		}
	}, nil
}

// allClosed tells whether every fault of the run is closed in its
// journal: undone, with nothing to undo, or never applied.
func (r *run) allClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.faults {
		switch f.result.Result {
		case ResultUndone, ResultNone, ResultNotApplied, ResultAbandoned:
		default:
			return false
		}
	}
	return true
}

// namespacesOf are the namespaces of the Cluster API Clusters of objs.
func namespacesOf(objs []providers.Object) []string {
	seen := map[string]bool{}
	var out []string
	for _, o := range objs {
		ns := o.Attributes[providers.AttrNamespace]
		if ns == "" || o.Attributes[providers.AttrCluster] == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		out = append(out, ns)
	}
	return out
}
