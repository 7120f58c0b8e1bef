package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/faultline-dev/faultline/internal/regularfile"
	"github.com/faultline-dev/faultline/providers/lab"
)

// ReadyFile, in a lab's folder, says its pool is stocked: every cluster it
// keeps ready for runs is Running, so the next run finds one
// (`faultline lab wait`).
const ReadyFile = "ready"

// WaitStocked waits until every cluster the server keeps ready of its
// first shape is Running, then writes ReadyFile in the lab's folder.
func (s *Server) WaitStocked(ctx context.Context) error {
	l, stock := s.pool.warm.Lab, s.pool.first
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		running, _, err := l.Stocked(ctx, lab.ClusterName, stock)
		return err == nil && running >= s.stock, nil
	})
	if err != nil {
		return fmt.Errorf("the lab's pool did not come up: %w", err)
	}
	return regularfile.WriteFile(filepath.Join(l.Dir(), ReadyFile), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600)
}

// WaitReady waits, within ctx, until the running lab named name says its
// pool is stocked (ReadyFile). A lab not recorded, or whose process is
// gone, is an error at once.
func WaitReady(ctx context.Context, name string) error {
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		records, err := lab.Records()
		if err != nil {
			return false, err
		}
		for _, r := range records {
			if r.Name() != name {
				continue
			}
			if !r.OwnerAlive() {
				return false, configErr("lab %s: its process (pid %d) is gone", name, r.PID)
			}
			_, err := os.Stat(filepath.Join(r.Dir, ReadyFile))
			return err == nil, nil
		}
		return false, configErr("lab %q: no such running lab ('faultline lab down' lists them)", name)
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("lab %s: its pool is not stocked yet: %w", name, context.Cause(ctx))
	}
	return err
}
