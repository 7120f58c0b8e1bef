package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// WorkloadImage is the workload's server, preloaded in faultline's node
// image (hack/kind-node/workload.go).
const WorkloadImage = "faultline.dev/workload:v1"

// workloadReadyWithin bounds the wait for a workload to serve before the
// first step.
const workloadReadyWithin = 3 * time.Minute

// labelRun marks the pods of one run: the anti-affinity of its replicas
// then ignores an earlier run's pods still terminating.
const labelRun = "faultline.dev/run"

// workloadManifest is w's objects as object.apply takes them: its
// namespace, a Deployment of the workload server, a NodePort Service in
// front of it, and its PodDisruptionBudget when it has one.
func workloadManifest(w scenario.Workload, run string) (string, error) {
	ns := w.NamespaceOrDefault()
	selector := map[string]any{"app.kubernetes.io/name": w.Name, labelRun: run}
	labels := map[string]any{"app.kubernetes.io/name": w.Name, "app.kubernetes.io/managed-by": "faultline"}
	meta := func(name string) map[string]any {
		return map[string]any{"name": name, "namespace": ns, "labels": labels}
	}
	pod := map[string]any{
		"terminationGracePeriodSeconds": 10,
		"containers": []any{map[string]any{
			"name": "workload", "image": WorkloadImage, "imagePullPolicy": "Never",
			"ports": []any{map[string]any{"containerPort": 8080, "name": "http"}},
			"env": []any{
				map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}},
				map[string]any{"name": "NODE_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "spec.nodeName"}}},
			},
			"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/ready", "port": 8080}, "periodSeconds": 1, "failureThreshold": 1},
		}},
	}
	if aff := spread(w.Spread, selector); aff != nil {
		pod["affinity"] = aff
	}
	objs := []any{
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}},
		map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(w.Name), "spec": map[string]any{
			"replicas": w.ReplicasOrDefault(),
			"selector": map[string]any{"matchLabels": selector},
			"template": map[string]any{"metadata": map[string]any{"labels": selector}, "spec": pod},
		}},
		map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": meta(w.Name), "spec": map[string]any{
			"type": "NodePort", "selector": selector,
			"ports": []any{map[string]any{"port": 80, "targetPort": 8080, "name": "http"}},
		}},
	}
	if b := w.DisruptionBudget; b != nil {
		spec := map[string]any{"selector": map[string]any{"matchLabels": selector}}
		if b.MinAvailable != nil {
			spec["minAvailable"] = *b.MinAvailable
		} else {
			spec["maxUnavailable"] = *b.MaxUnavailable
		}
		objs = append(objs, map[string]any{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta(w.Name), "spec": spec})
	}
	docs := make([]string, 0, len(objs))
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return "", fmt.Errorf("workload %s: %w", w.Name, err)
		}
		docs = append(docs, string(b))
	}
	return strings.Join(docs, "---\n"), nil
}

// spread is the pods' anti-affinity over nodes, nil for none.
func spread(how string, selector map[string]any) map[string]any {
	term := map[string]any{"labelSelector": map[string]any{"matchLabels": selector}, "topologyKey": "kubernetes.io/hostname"}
	switch how {
	case "required":
		return map[string]any{"podAntiAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{term}}}
	case "preferred":
		return map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{
			map[string]any{"weight": 100, "podAffinityTerm": term}}}}
	}
	return nil
}

// startWorkloads deploys every workload, journaled as an object.apply
// before it is applied, waits until each serves, and starts its monitor.
func (r *run) startWorkloads(ctx context.Context) error {
	for _, w := range r.in.Scenario.Spec.Workloads {
		m, err := r.startWorkload(ctx, w)
		if err != nil {
			return fmt.Errorf("workload %s: %w", w.Name, err)
		}
		r.mu.Lock()
		r.monitors[w.Name] = m
		r.mu.Unlock()
	}
	return nil
}

func (r *run) startWorkload(ctx context.Context, w scenario.Workload) (*monitor, error) {
	objs := r.objects[w.Target]
	if len(objs) == 0 {
		return nil, fmt.Errorf("target %s resolved to nothing: no cluster to run it in", w.Target)
	}
	scope := objs[0]
	wl, err := providers.As[providers.Workloads](r.in.Provider, providers.CapWorkloads)
	if err != nil {
		return nil, err
	}
	objects, err := providers.As[providers.Objects](r.in.Provider, providers.CapObjects)
	if err != nil {
		return nil, err
	}
	network, err := wl.NodeNetwork(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("the network of its nodes: %w", err)
	}
	manifest, err := workloadManifest(w, fmt.Sprintf("%x", r.res.StartedAt.UnixNano()))
	if err != nil {
		return nil, err
	}
	params := map[string]string{"cluster": "workload", "manifest": manifest, paramBackups: filepath.Join(r.backupDir(), "workload-"+w.Name)}
	if err := r.applyJournaled(ctx, "workload/"+w.Name, "object.apply", scope, params, w.Name); err != nil {
		return nil, err
	}
	svc, err := objects.GetObject(ctx, scope, providers.ObjectRef{Cluster: "workload", APIVersion: "v1", Kind: "Service", Namespace: w.NamespaceOrDefault(), Name: w.Name})
	if err != nil {
		return nil, fmt.Errorf("read back its Service: %w", err)
	}
	if svc == nil {
		return nil, fmt.Errorf("its Service %s/%s is gone right after it was applied", w.NamespaceOrDefault(), w.Name)
	}
	port := nodePortOf(svc)
	if port == 0 {
		return nil, fmt.Errorf("its Service %s/%s has no nodePort", w.NamespaceOrDefault(), w.Name)
	}
	m := newMonitor(w, scope, objects, network, port)
	if err := r.waitServing(ctx, m); err != nil {
		return nil, err
	}
	r.tl.Record("runner", "workload/"+w.Name, "workload-ready", map[string]string{"replicas": fmt.Sprint(w.ReplicasOrDefault()), "nodePort": fmt.Sprint(port)})
	m.start(ctx)
	return m, nil
}

func nodePortOf(svc map[string]any) int {
	spec, _ := svc["spec"].(map[string]any)
	ports, _ := spec["ports"].([]any)
	if len(ports) == 0 {
		return 0
	}
	p, _ := ports[0].(map[string]any)
	switch v := p["nodePort"].(type) {
	case int64:
		return int(v)
	case float64:
		return int(v)
	case int:
		return v
	}
	return 0
}

// waitServing waits until every replica is ready and has answered through
// every node that passes kube-proxy's health check: a pod can be ready
// before every node routes to it, and a gap that is the start's own must
// not be counted as the fault's.
func (r *run) waitServing(ctx context.Context, m *monitor) error {
	want := m.w.ReplicasOrDefault()
	last := "nothing read yet"
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, workloadReadyWithin, true, func(ctx context.Context) (bool, error) {
		ready, err := readyEndpoints(ctx, m.objects, m.scope, m.w.NamespaceOrDefault(), m.w.Name)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		if ready < want {
			last = fmt.Sprintf("%d of %d replicas ready", ready, want)
			return false, nil
		}
		m.refreshNodes(ctx)
		m.mu.Lock()
		nodes := append([]string(nil), m.nodes...)
		m.mu.Unlock()
		if len(nodes) == 0 {
			last = "no node passes kube-proxy's health check"
			return false, nil
		}
		pods := map[string]bool{}
		for _, n := range nodes {
			// kube-proxy picks the pod: a few requests per node reach
			// each of them.
			for i := 0; i < 4*want; i++ {
				body, err := m.get(ctx, m.serviceURL(n))
				if err != nil {
					last = fmt.Sprintf("via %s: %v", n, err)
					return false, nil
				}
				pods[strings.TrimSpace(body)] = true
			}
		}
		if len(pods) < want {
			last = fmt.Sprintf("%d of %d replicas answered", len(pods), want)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("not serving within %s (%s): %w", workloadReadyWithin, last, err)
	}
	return nil
}

// stopWorkloads stops every monitor and records what it measured.
func (r *run) stopWorkloads() {
	r.mu.Lock()
	monitors := r.monitors
	r.monitors = map[string]*monitor{}
	firstInject := r.firstInject
	r.mu.Unlock()
	for _, w := range r.in.Scenario.Spec.Workloads {
		m := monitors[w.Name]
		if m == nil {
			continue
		}
		m.stop()
		now := time.Now()
		res := WorkloadResult{Name: w.Name, Target: w.Target, Namespace: w.NamespaceOrDefault(), Replicas: w.ReplicasOrDefault(), ServedBy: m.served()}
		for _, of := range []string{scenario.MeasureRequests, scenario.MeasureEndpoints} {
			mr := m.series(of).result(of, now, firstInject)
			res.Measures = append(res.Measures, mr)
			r.tl.Record("runner", "workload/"+w.Name, "workload-measured", map[string]string{
				"of": of, "samples": fmt.Sprint(mr.Samples), "failed": fmt.Sprint(mr.Failed), "gaps": fmt.Sprint(len(mr.Gaps)),
				"total": mr.Total.String(), "longest": mr.Longest.String()})
		}
		r.res.Workloads = append(r.res.Workloads, res)
	}
}

// WorkloadResult is what a workload felt over the run.
type WorkloadResult struct {
	Name      string          `json:"name"`
	Target    string          `json:"target"`
	Namespace string          `json:"namespace"`
	Replicas  int             `json:"replicas"`
	Measures  []MeasureResult `json:"measures"`
	// ServedBy counts the answers of each pod, as "pod P on node N".
	ServedBy map[string]int `json:"servedBy,omitempty"`
}

// Measure returns the measure of that name, or nil.
func (w WorkloadResult) Measure(of string) *MeasureResult {
	for i := range w.Measures {
		if w.Measures[i].Of == of {
			return &w.Measures[i]
		}
	}
	return nil
}

// monitorOf returns the monitor of the workload args name.
func (r *run) monitorOf(name string) *monitor {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.monitors[name]
}

// assertDisruption bounds a workload's disruption so far.
func (r *run) assertDisruption(d scenario.DisruptionAssertion) (bool, string) {
	m := r.monitorOf(d.Workload)
	if m == nil {
		return false, fmt.Sprintf("workload %s is not watched (it did not start, or the run is over)", d.Workload)
	}
	of := scenario.MeasureOf(map[string]string{"of": d.Of})
	r.mu.Lock()
	firstInject := r.firstInject
	r.mu.Unlock()
	mr := m.series(of).result(of, time.Now(), firstInject)
	got := fmt.Sprintf("workload %s's %s: %d gap(s), %s in all, longest %s (%d of %d samples failed)", d.Workload, of, len(mr.Gaps), mr.Total, mr.Longest, mr.Failed, mr.Samples)
	if mr.Samples == 0 {
		return false, got + ": nothing was sampled"
	}
	var over []string
	if d.AtMost != nil && mr.Total.Duration > d.AtMost.Duration {
		over = append(over, "over atMost "+d.AtMost.String())
	}
	if d.Longest != nil && mr.Longest.Duration > d.Longest.Duration {
		over = append(over, "longest over "+d.Longest.String())
	}
	if len(over) > 0 {
		return false, got + ": " + strings.Join(over, ", ")
	}
	return true, got + ": within bounds"
}
