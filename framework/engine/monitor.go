package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/framework/scenario"
	"github.com/faultline-dev/faultline/providers"
)

// monitor samples a workload's two measures until it is stopped, as the
// disruption monitors of CI systems do: real requests through its Service
// and the Service's ready endpoints.
type monitor struct {
	w        scenario.Workload
	scope    providers.Object
	objects  providers.Objects
	network  netip.Prefix
	nodePort int
	// healthPort is kube-proxy's health check port (kubeProxyHealth).
	healthPort int
	interval   time.Duration
	client     *http.Client

	requests, endpoints series

	mu sync.Mutex
	// nodes are the addresses of the Nodes whose kube-proxy passes its
	// health check, as a cloud load balancer keeps them for a NodePort
	// Service; next turns through them.
	nodes []string
	next  int
	// servedBy counts the answers of each pod ("pod P on node N").
	servedBy map[string]int
	// recorded is the number of the last endpoint reading recorded
	// (sampleEndpoints).
	recorded uint64

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// requestTimeout bounds one request and one health check: a node that is
// off does not answer at all, and its requests end here.
const requestTimeout = 2 * time.Second

// kubeProxyHealth is kube-proxy's health check port on every node (a
// variable only for the runner's tests, whose nodes are 127.0.0.1).
var kubeProxyHealth = 10256

func newMonitor(w scenario.Workload, scope providers.Object, objects providers.Objects, network netip.Prefix, nodePort int) *monitor {
	return &monitor{
		w: w, scope: scope, objects: objects, network: network, nodePort: nodePort, healthPort: kubeProxyHealth,
		interval: w.IntervalOrDefault().Duration,
		// No keep-alive: each request takes a new connection, as a new
		// client's would, so that it goes wherever kube-proxy sends it now.
		client:   &http.Client{Timeout: requestTimeout, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil, DialContext: (&net.Dialer{Timeout: requestTimeout}).DialContext}},
		servedBy: map[string]int{},
	}
}

// series is the measure of that name.
func (m *monitor) series(of string) *series {
	if of == scenario.MeasureEndpoints {
		return &m.endpoints
	}
	return &m.requests
}

// start samples in the background until stop.
func (m *monitor) start(ctx context.Context) {
	ctx, m.cancel = context.WithCancel(context.WithoutCancel(ctx))
	// The nodes are known before the first request.
	m.refreshNodes(ctx)
	m.loop(ctx, time.Second, func(ctx context.Context) { m.refreshNodes(ctx) })
	m.loop(ctx, m.interval, func(ctx context.Context) {
		n, at := m.requests.begin()
		m.wg.Add(1)
		// Requests overlap: one waiting for its timeout does not hold
		// back the next sample.
		go func() {
			defer m.wg.Done()
			sm := m.request(ctx, at)
			if ctx.Err() != nil {
				m.requests.end(n, nil)
				return
			}
			m.requests.end(n, &sm)
		}()
	})
	// Endpoint readings overlap too, a few at most: an API server slow to
	// answer one list does not move the next reading's time.
	inFlight := make(chan struct{}, maxEndpointReads)
	m.loop(ctx, m.interval, func(ctx context.Context) {
		select {
		case inFlight <- struct{}{}:
		default:
			return // as many reads as allowed wait on the API server
		}
		n, at := m.endpoints.begin()
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer func() { <-inFlight }()
			m.sampleEndpoints(ctx, n, at)
		}()
	})
}

// maxEndpointReads bounds the endpoint readings in flight at once.
const maxEndpointReads = 4

// stop ends the sampling and waits for the samples in flight.
func (m *monitor) stop() {
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
}

// loop calls f at once and then every interval until ctx ends.
func (m *monitor) loop(ctx context.Context, every time.Duration, f func(context.Context)) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			f(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// nodeAddresses lists the InternalIP of each Node of the workload cluster
// inside the provider's node network, sorted.
func (m *monitor) nodeAddresses(ctx context.Context) ([]string, error) {
	nodes, err := m.objects.ListObjects(ctx, m.scope, providers.ObjectRef{Cluster: "workload", APIVersion: "v1", Kind: "Node"})
	if err != nil {
		return nil, fmt.Errorf("list the workload cluster's Nodes: %w", err)
	}
	var out []string
	for _, n := range nodes {
		status, _ := n["status"].(map[string]any)
		addrs, _ := status["addresses"].([]any)
		for _, a := range addrs {
			am, _ := a.(map[string]any)
			ip, err := netip.ParseAddr(fmt.Sprint(am["address"]))
			if am["type"] == "InternalIP" && err == nil && m.network.Contains(ip) {
				out = append(out, ip.String())
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// refreshNodes keeps the nodes whose kube-proxy is healthy. A list the API
// server does not answer keeps the last one.
func (m *monitor) refreshNodes(ctx context.Context) {
	addrs, err := m.nodeAddresses(ctx)
	if err != nil {
		return
	}
	healthy := make([]bool, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := m.get(ctx, "http://"+net.JoinHostPort(a, strconv.Itoa(m.healthPort))+"/healthz")
			healthy[i] = err == nil
		}()
	}
	wg.Wait()
	var keep []string
	for i, a := range addrs {
		if healthy[i] {
			keep = append(keep, a)
		}
	}
	m.mu.Lock()
	m.nodes = keep
	m.mu.Unlock()
}

// pick returns the next healthy node, and one other when there is one.
func (m *monitor) pick() (first, second string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.nodes) == 0 {
		return "", ""
	}
	m.next++
	first = m.nodes[m.next%len(m.nodes)]
	if len(m.nodes) > 1 {
		second = m.nodes[(m.next+1)%len(m.nodes)]
	}
	return first, second
}

// request sends one request through the Service's NodePort, and once more
// through another node when the first fails, as a client behind a load
// balancer would retry.
func (m *monitor) request(ctx context.Context, at time.Time) sample {
	sm := sample{at: at}
	first, second := m.pick()
	if first == "" {
		sm.reason = "no node passes kube-proxy's health check"
		return sm
	}
	body, err := m.get(ctx, m.serviceURL(first))
	if err != nil && second != "" {
		sm.retried = true
		body, err = m.get(ctx, m.serviceURL(second))
		first = second
	}
	if err != nil {
		sm.retried, sm.reason = false, "via "+first+": "+err.Error()
		return sm
	}
	m.mu.Lock()
	m.servedBy[strings.TrimSpace(body)]++
	m.mu.Unlock()
	sm.ok = true
	return sm
}

func (m *monitor) serviceURL(node string) string {
	return "http://" + net.JoinHostPort(node, strconv.Itoa(m.nodePort)) + "/"
}

// get reads url; anything but a 200 is an error that says what came back.
func (m *monitor) get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		var ue interface{ Timeout() bool }
		if errors.As(err, &ue) && ue.Timeout() {
			return "", errors.New("timed out")
		}
		return "", shortNetError(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", shortNetError(err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return string(b), nil
}

// shortNetError keeps what a network error says last ("connection
// refused"), without the request it was part of.
func shortNetError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return errors.New(lastClause(op.Err.Error()))
	}
	return errors.New(lastClause(err.Error()))
}

func lastClause(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// sampleEndpoints reads the Service's ready endpoints once, as reading
// number seq begun at at. Readings overlap, and a sample is dated when its
// reading began. A reading answered after one begun later is left out:
// dated before that one, it may have read a later state than it did, and
// the measure would show the endpoints going and coming back where they
// did not. A slow API server can answer overlapping lists in any order.
func (m *monitor) sampleEndpoints(ctx context.Context, seq uint64, at time.Time) {
	n, err := readyEndpoints(ctx, m.objects, m.scope, m.w.NamespaceOrDefault(), m.w.Name)
	var sm *sample
	defer func() { m.endpoints.end(seq, sm) }()
	if ctx.Err() != nil {
		return
	}
	m.mu.Lock()
	stale := seq < m.recorded
	if !stale {
		m.recorded = seq
	}
	m.mu.Unlock()
	switch {
	case stale:
	case err != nil:
		m.endpoints.unread()
	case n == 0:
		sm = &sample{at: at, reason: "no ready endpoint"}
	default:
		sm = &sample{at: at, ok: true}
	}
}

// readyEndpoints counts the ready endpoints of the Service's
// EndpointSlices.
func readyEndpoints(ctx context.Context, objects providers.Objects, scope providers.Object, namespace, service string) (int, error) {
	slices, err := objects.ListObjects(ctx, scope, providers.ObjectRef{Cluster: "workload", APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice", Namespace: namespace})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range slices {
		meta, _ := s["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		if labels["kubernetes.io/service-name"] != service {
			continue
		}
		eps, _ := s["endpoints"].([]any)
		for _, e := range eps {
			em, _ := e.(map[string]any)
			cond, _ := em["conditions"].(map[string]any)
			if cond["ready"] == true {
				n++
			}
		}
	}
	return n, nil
}

// served lists who answered, most first.
func (m *monitor) served() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.servedBy))
	for k, v := range m.servedBy {
		out[k] = v
	}
	return out
}
