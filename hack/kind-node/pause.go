//go:build ignore

// pause is the pod sandbox's process in faultline's kind node image
// (hack/kind-image.sh builds it; no registry serves registry.k8s.io/pause
// here). Like the upstream one, it waits for SIGINT or SIGTERM and reaps
// the children a shared process namespace hands it.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
