package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/faultline-dev/faultline/framework/engine"
	"github.com/faultline-dev/faultline/internal/regularfile"
	"github.com/faultline-dev/faultline/providers"
	"github.com/faultline-dev/faultline/providers/capi"
)

// JournalCopies are the journal copies a management cluster holds (see
// providers.SharedJournals), fetched into a folder of this host so that
// recover reads them as journals: Paths to recover, Origins for
// engine.RecoverInput. WriteBack puts them back once recovered.
type JournalCopies struct {
	Paths   []string
	Origins map[string]string
	sj      providers.SharedJournals
	copies  map[string]providers.SharedJournal // by local path
}

// FetchJournalCopies reaches the management cluster m names, which must
// be allowed (the copies' faults are undone there), and writes each
// journal copy it holds into dir/NAMESPACE/ID/journal.jsonl.
func FetchJournalCopies(ctx context.Context, m ManagementConfig, dir string) (*JournalCopies, error) {
	c, source, name, err := ManagementClient(m, "--kubeconfig")
	if err != nil {
		return nil, err
	}
	if !Allowed(m.Allowed, EnvAllowedContexts, name) {
		return nil, configErr("refusing to recover through context %q: it is not in --allow-context or $%s", name, EnvAllowedContexts)
	}
	sj := capi.New(c, capi.WithKubeconfig(source, name))
	copies, err := sj.Journals(ctx)
	if err != nil {
		return nil, err
	}
	out := &JournalCopies{Origins: map[string]string{}, sj: sj, copies: map[string]providers.SharedJournal{}}
	for _, cp := range copies {
		path := filepath.Join(dir, cp.Namespace, cp.ID, engine.JournalName)
		origin, err := engine.JournalOrigin(cp.Content)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(path), 0o700)
		}
		if err == nil {
			err = regularfile.WriteFile(path, cp.Content, 0o600)
		}
		if err != nil {
			return nil, fmt.Errorf("journal copy Secret %s/%s: %w", cp.Namespace, cp.Name, err)
		}
		out.Paths = append(out.Paths, path)
		out.Origins[path] = origin
		out.copies[path] = cp
	}
	return out, nil
}

// WriteBack puts each recovered journal back where its copy was: deleted
// once nothing of it is pending, else replaced with what recover appended
// (its done lines), so that the next recover, here or elsewhere, goes on
// from there.
func (c *JournalCopies) WriteBack(ctx context.Context, key []byte, heads string) error {
	var errs []error
	for path, cp := range c.copies {
		n, err := engine.PendingCount(path, c.Origins[path], key, heads)
		if err != nil {
			errs = append(errs, fmt.Errorf("journal copy %s/%s, recovered into %s: %w", cp.Namespace, cp.Name, path, err))
			continue
		}
		if n == 0 {
			errs = append(errs, c.sj.DeleteJournal(ctx, cp.Namespace, cp.ID))
			continue
		}
		content, err := regularfile.Read(path, regularfile.Small)
		if err == nil {
			err = c.sj.PutJournal(ctx, cp.Namespace, cp.ID, content)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
