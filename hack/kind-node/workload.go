//go:build ignore

// workload is the application faultline deploys beside a fault to measure
// what it feels (a scenario's spec.workloads). hack/kind-image.sh builds it
// and preloads it as faultline.dev/workload:v1.
//
// It answers every request on :8080 with 200 and the pod and node it runs
// on (POD_NAME, NODE_NAME), and its readiness on /ready. On SIGTERM it
// fails its readiness at once and goes on serving for GRACE (default 2 s),
// as a well-behaved server does, so that the endpoints controller and
// kube-proxy take it out of the Service before it stops answering: a gap
// faultline then measures is the cluster's, not a server that quit early.
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	grace := 2 * time.Second
	if v := os.Getenv("GRACE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			log.Fatalf("GRACE=%q: %v", v, err)
		}
		grace = d
	}
	var stopping atomic.Bool
	who := fmt.Sprintf("pod %s on node %s\n", os.Getenv("POD_NAME"), os.Getenv("NODE_NAME"))
	mux := http.NewServeMux()
	mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
		if stopping.Load() {
			http.Error(w, "stopping", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		fmt.Fprint(w, who)
	})
	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-signals
		stopping.Store(true)
		time.Sleep(grace) // the grace a terminating server serves for, by design
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			log.Printf("shutdown: %v", err)
		}
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
