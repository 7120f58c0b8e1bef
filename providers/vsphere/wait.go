package vsphere

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/task"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/types"
)

// waitFor is govmomi's property.Wait (a property collector of its own,
// destroyed at the end) whose collector and filter are made with a
// context that ctx's end does not cut: only the wait for updates ends
// with ctx. property.Wait makes the filter with ctx and destroys the
// collector as soon as that call returns; cut mid-call, the destroy
// reached vCenter while it still made the filter, and govmomi's simulator
// (whose collectors take no lock) raced on the collector, which the race
// detector caught in CI (TestIntegrationRunSeveral).
func waitFor(ctx context.Context, c *vim25.Client, obj types.ManagedObjectReference, ps []string, f func([]types.PropertyChange) bool) (err error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), setupTimeout)
	defer cancel()
	pc, err := property.DefaultCollector(c).Create(sctx)
	if err != nil {
		return err
	}
	defer func() {
		if derr := pc.Destroy(context.WithoutCancel(ctx)); derr != nil && err == nil {
			err = derr
		}
	}()
	filter := new(property.WaitFilter).Add(obj, obj.Type, ps)
	if _, err := pc.CreateFilter(sctx, filter.CreateFilter); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	seen := false
	err = pc.WaitForUpdatesEx(ctx, &filter.WaitOptions, func(updates []types.ObjectUpdate) bool {
		for _, u := range updates {
			if f(u.ChangeSet) {
				seen = true
				return true
			}
		}
		return false
	})
	// WaitForUpdatesEx returns nil when ctx is canceled (it cancels the
	// wait at vCenter): a wait that ended before f was satisfied says why.
	if err == nil && !seen {
		if err = ctx.Err(); err == nil {
			err = errors.New("the property collector's wait ended before the change it waited for")
		}
	}
	return err
}

// setupTimeout bounds the calls that make a wait's collector and filter,
// which a caller's end does not cut.
const setupTimeout = 30 * time.Second

// WaitTask waits for t to succeed or fail, or for ctx to end (nil then, as
// Task.Wait returns: the caller reads ctx). A failed task's error is
// vCenter's fault, as Task.Wait's is. Use it for Task.Wait (waitFor says
// why).
func WaitTask(ctx context.Context, t *object.Task) error {
	var info *types.TaskInfo
	err := waitFor(ctx, t.Client(), t.Reference(), []string{"info"}, func(changes []types.PropertyChange) bool {
		for _, ch := range changes {
			if ti, ok := ch.Val.(types.TaskInfo); ok {
				info = &ti
			}
		}
		return info != nil && (info.State == types.TaskInfoStateSuccess || info.State == types.TaskInfoStateError)
	})
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		if ctx.Err() != nil {
			return nil
		}
		return err
	case err != nil:
		return err
	case info.State == types.TaskInfoStateError && info.Error != nil:
		// The error Task.Wait returns, which describe reads the fault of.
		return task.Error{LocalizedMethodFault: info.Error, Description: info.Description}
	case info.State == types.TaskInfoStateError:
		return fmt.Errorf("task %s failed", t.Reference().Value)
	}
	return nil
}
