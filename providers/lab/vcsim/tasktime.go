package vcsim

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// vmTasks are the names vcsim gives the VM tasks Input.VMTaskTime holds
// (Task.Info.Name, which govmomi's TaskDelay is keyed by): the power
// operations, reconfigure, relocate and destroy. A clone's task runs on
// its template, which vCenter lets several clones read at once.
var vmTasks = []string{"PowerOn", "PowerOff", "Reset", "Suspend", "ReconfigVm", "RelocateVm", "Destroy"}

// taskTime is the VM task time of the simulators running in this process:
// govmomi's simulator keeps task delays in one package variable
// (simulator.TaskDelay), so every simulator of a process has the same.
var taskTime struct {
	mu      sync.Mutex
	d       time.Duration
	running int
}

// holdTaskTime sets the process's VM task time to d for a simulator that
// starts, and fails when a running one has another (the lab's profile is
// process-wide too). release is its Close's.
func holdTaskTime(d time.Duration) (release func(), err error) {
	taskTime.mu.Lock()
	defer taskTime.mu.Unlock()
	if taskTime.running > 0 && taskTime.d != d {
		return nil, fmt.Errorf("a VM task time of %s: the simulators of this process run with %s (govmomi's task delay is process-wide)", d, taskTime.d)
	}
	if taskTime.running == 0 && taskTime.d != d {
		delays := map[string]int(nil)
		if d > 0 {
			// The delay runs without the VM's lock held (LockHandoff 0),
			// so its properties stay readable, as vCenter's are while a
			// task runs.
			delays = map[string]int{"LockHandoff": 0}
			for _, name := range vmTasks {
				delays[name] = int(d.Milliseconds())
			}
		}
		simulator.TaskDelay.MethodDelay = delays
		taskTime.d = d
	}
	taskTime.running++
	var once sync.Once
	return func() {
		once.Do(func() {
			taskTime.mu.Lock()
			defer taskTime.mu.Unlock()
			taskTime.running--
		})
	}, nil
}

// taskInProgress is vCenter's answer to a task on vm while a task of its
// own still runs (TaskInProgress, naming that task); nil when none does or
// the method starts no task. Clones are left to run side by side.
func taskInProgress(ctx *simulator.Context, m *simulator.Method, vm *simulator.VirtualMachine) types.BaseMethodFault {
	if !strings.HasSuffix(m.Name, "_Task") || m.Name == "CloneVM_Task" {
		return nil
	}
	var recent []types.ManagedObjectReference
	ctx.WithLock(vm, func() { recent = append(recent, vm.RecentTask...) })
	for _, ref := range recent {
		t, ok := ctx.Map.Get(ref).(*simulator.Task)
		if !ok {
			continue
		}
		var state types.TaskInfoState
		var entity *types.ManagedObjectReference
		ctx.WithLock(t, func() { state, entity = t.Info.State, t.Info.Entity })
		if entity != nil && *entity == vm.Reference() && (state == types.TaskInfoStateRunning || state == types.TaskInfoStateQueued) {
			return &types.TaskInProgress{Task: ref}
		}
	}
	return nil
}
