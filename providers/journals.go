package providers

import "context"

// SharedJournals is implemented by a provider whose targets' management
// cluster can keep a copy of a run's journal, where a runner on another
// machine finds it: a run killed with its host (a CI runner, a
// rescheduled pod) leaves its pending faults there, and `faultline
// recover --kubeconfig` anywhere undoes them. The copy is the journal as
// written, every line sealed with the journal key: whoever recovers it
// needs that key, and a copy edited in the cluster does not verify.
type SharedJournals interface {
	// PutJournal writes content, the whole journal id, as its copy in
	// namespace (of the Clusters its faults went to), replacing what an
	// earlier call wrote.
	PutJournal(ctx context.Context, namespace, id string, content []byte) error
	// DeleteJournal deletes the copy of journal id in namespace; one
	// already gone is no error.
	DeleteJournal(ctx context.Context, namespace, id string) error
	// Journals lists the copies the management cluster holds, in every
	// namespace it lets the caller read.
	Journals(ctx context.Context) ([]SharedJournal, error)
}

// SharedJournal is one journal copy in a management cluster.
type SharedJournal struct {
	// Namespace and Name are the copy's (a Secret's).
	Namespace, Name string
	// ID is the journal's identity (its lines' journal field).
	ID      string
	Content []byte
}
