package management

import (
	"strings"
	"testing"
)

const stacks = `goroutine 1 [running]:
main.main()
	/src/main.go:10 +0x1d

goroutine 7 [select]:
github.com/vmware/govmomi/object.(*Task).WaitForResult(0x1, {0x2, 0x3})
	/mod/govmomi/object/task.go:70 +0x11
sigs.k8s.io/cluster-api-provider-vsphere/controllers.vmReconciler.Reconcile({0x4})
	/mod/capv/controllers/vspherevm_controller.go:120 +0x22
sigs.k8s.io/controller-runtime/pkg/internal/controller.(*Controller[...]).reconcileHandler(0x5, {0x6})
	/mod/cr/pkg/internal/controller/controller.go:462 +0x33

goroutine 8 [select]:
github.com/vmware/govmomi/object.(*Task).WaitForResult(0x7, {0x8, 0x9})
	/mod/govmomi/object/task.go:70 +0x11
sigs.k8s.io/cluster-api-provider-vsphere/controllers.vmReconciler.Reconcile({0xa})
	/mod/capv/controllers/vspherevm_controller.go:120 +0x22
sigs.k8s.io/controller-runtime/pkg/internal/controller.(*Controller[...]).reconcileHandler(0xb, {0xc})
	/mod/cr/pkg/internal/controller/controller.go:462 +0x33

goroutine 9 [chan receive]:
k8s.io/client-go/util/workqueue.(*Typed[...]).Get(0xd)
	/mod/client-go/util/workqueue/queue.go:280 +0x44
`

func TestBusyIn(t *testing.T) {
	got := busyIn([]byte(stacks))
	if n := strings.Count(got, "WaitForResult"); n != 1 {
		t.Errorf("the reconcile's stack appears %d times, want once (the same frames once):\n%s", n, got)
	}
	for _, idle := range []string{"main.main", "workqueue"} {
		if strings.Contains(got, idle) {
			t.Errorf("report has the goroutine in %s, which does no controller's work:\n%s", idle, got)
		}
	}
	if strings.Contains(got, ".go:") {
		t.Errorf("report has file lines, want function names only:\n%s", got)
	}
	if want := "goroutine 7 [select] (2 like it)\n  github.com/vmware/govmomi/object.(*Task).WaitForResult\n"; !strings.HasPrefix(got, want) {
		t.Errorf("report starts %q, want %q", got, want)
	}
}
