package capi

import (
	"context"
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/faultline-dev/faultline/providers"
)

var _ providers.SharedJournals = (*Provider)(nil)

// A journal copy is a Secret, for its lines name what was faulted and how
// to undo it: faultline-journal-ID in the namespace of the Cluster the
// faults went to, labelled so that recover lists them.
const (
	labelJournal  = "faultline.dev/journal"
	journalPrefix = "faultline-journal-"
	journalKey    = "journal.jsonl"
)

// PutJournal implements providers.SharedJournals with a Secret in obj's
// namespace of the management cluster.
func (p *Provider) PutJournal(ctx context.Context, namespace, id string, content []byte) error {
	key, err := journalSecretKey(namespace, id)
	if err != nil {
		return err
	}
	s := &corev1.Secret{}
	err = p.c.Get(ctx, key, s)
	switch {
	case apierrors.IsNotFound(err):
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace,
				Labels: map[string]string{labelJournal: id, "app.kubernetes.io/managed-by": "faultline"}},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{journalKey: content},
		}
		err = p.c.Create(ctx, s)
	case err == nil:
		s.Data = map[string][]byte{journalKey: content}
		err = p.c.Update(ctx, s)
	}
	if err != nil {
		return fmt.Errorf("journal copy Secret %s: %w", key, err)
	}
	return nil
}

// DeleteJournal implements providers.SharedJournals.
func (p *Provider) DeleteJournal(ctx context.Context, namespace, id string) error {
	key, err := journalSecretKey(namespace, id)
	if err != nil {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	if err := p.c.Delete(ctx, s); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete journal copy Secret %s: %w", key, err)
	}
	return nil
}

// Journals implements providers.SharedJournals: every Secret labelled as
// a journal copy.
func (p *Provider) Journals(ctx context.Context) ([]providers.SharedJournal, error) {
	var l corev1.SecretList
	if err := p.c.List(ctx, &l, client.HasLabels{labelJournal}); err != nil {
		return nil, fmt.Errorf("list journal copy Secrets: %w", err)
	}
	out := make([]providers.SharedJournal, 0, len(l.Items))
	for _, s := range l.Items {
		out = append(out, providers.SharedJournal{Namespace: s.Namespace, Name: s.Name, ID: s.Labels[labelJournal], Content: s.Data[journalKey]})
	}
	return out, nil
}

// journalSecretKey is the Secret of journal id in namespace; id is a
// chained journal's identity (32 hex digits), which a Secret's name and a
// label's value can hold.
func journalSecretKey(namespace, id string) (client.ObjectKey, error) {
	if namespace == "" || !journalID.MatchString(id) {
		return client.ObjectKey{}, fmt.Errorf("journal copy %q in namespace %q: expected a namespace and a journal identity of 32 hex digits: %w", id, namespace, providers.ErrUnsupported)
	}
	return client.ObjectKey{Namespace: namespace, Name: journalPrefix + id}, nil
}

var journalID = regexp.MustCompile(`^[0-9a-f]{32}$`)
