package workloadapi

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
	inmemoryclient "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime/client"
	inmemoryapi "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/server/api"
	inmemoryetcd "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/server/etcd"
	"sigs.k8s.io/cluster-api/util/certs"
)

// Server is one workload cluster's control-plane endpoint: Cluster
// API's in-memory API server and etcd members behind a TLS listener on
// 127.0.0.1. Upstream's WorkloadClustersMux is not used because it and its
// debug server listen on every interface.
//
// The endpoint answers only while at least one control plane's API server
// runs. Before the first starts, connections are closed at once; once the
// last stops, the port is closed and connections are refused, as a load
// balancer with no live backend refuses them.
type Server struct {
	rg   string
	log  logr.Logger
	addr *net.TCPAddr
	srv  *http.Server
	key  crypto.Signer
	// store serialises access to the cluster's in-memory store; see
	// lockedClient.
	store sync.Mutex
	mem   inmemoryruntime.Manager

	mu         sync.Mutex
	listener   net.Listener // nil while the port is closed
	noQuorum   bool
	apiServers map[string]bool
	apiCert    *tls.Certificate
	etcdCerts  map[string]*tls.Certificate
	learners   map[uint64]*learner
	conns      map[net.Conn]bool
	// admitter runs the cluster's webhooks on dry-run creates.
	admitter func(context.Context) (*Admitter, error)
}

// New reserves the endpoint of the cluster whose store is resource group
// rg of mgr; it serves once the first API server is added. admit, when
// set, gives the admitter that runs the cluster's webhooks on dry-run
// creates (the node simulator makes it on first use).
func New(mgr inmemoryruntime.Manager, rg string, log logr.Logger, admit func(context.Context) (*Admitter, error)) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for workload cluster %s: %w", rg, err)
	}
	key, err := NewKey()
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("workload cluster %s: serving key: %w", rg, err)
	}
	w := &Server{
		rg: rg, log: log, key: key, addr: l.Addr().(*net.TCPAddr), mem: mgr, apiServers: map[string]bool{}, admitter: admit,
		etcdCerts: map[string]*tls.Certificate{}, learners: map[uint64]*learner{}, conns: map[net.Conn]bool{},
	}
	w.listener = &gatedListener{Listener: l, w: w}
	resolve := func(string) (string, error) { return rg, nil }
	api := &extraAPI{mem: mgr, rg: rg, next: inmemoryapi.NewAPIServerHandler(mgr, log, resolve), locked: w.locked(), log: log}
	etcd := w.etcdWithLearners(log, inmemoryetcd.NewEtcdServerHandler(mgr, log, resolve))
	w.srv = &http.Server{
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("content-type"), "application/grpc") {
				// etcd calls read only the typed etcd pods: no lock, and
				// no stream of theirs can hold it.
				etcd.ServeHTTP(rw, r)
				return
			}
			if !w.HasQuorum() {
				writeNoLeader(log, rw)
				return
			}
			if isDryRunCreate(r) {
				w.serveDryRunCreate(rw, r) // webhooks run unlocked
				return
			}
			if isWatchRequest(r) || strings.HasSuffix(r.URL.Path, "/portforward") {
				api.ServeHTTP(rw, r) // streams run unlocked
				return
			}
			// Every other request is answered into memory under the
			// store's lock and sent after it is released: a client slow to
			// read (HTTP/2 shares one flow-control window among a
			// connection's streams) must not hold the store.
			rec := &recorder{header: http.Header{}, status: http.StatusOK}
			w.store.Lock()
			api.ServeHTTP(rec, r)
			w.store.Unlock()
			rec.replay(log, rw)
		}),
		TLSConfig:         &tls.Config{GetCertificate: w.certificate, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		// Clients that give up on a stopped API server fail handshakes;
		// that is the fault working, not news.
		ErrorLog: stdlog.New(io.Discard, "", 0),
	}
	w.serve()
	return w, nil
}

// serve serves the current listener until it is closed; call with the
// listener set.
func (w *Server) serve() {
	l := w.listener
	go func() {
		// It ends when the listener closes (no API server left) or the
		// server does (the lab stops); anything else is news.
		if err := w.srv.ServeTLS(l, "", ""); !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			w.log.Error(err, "workload endpoint stopped serving", "cluster", w.rg)
		}
	}()
}

// client is the cluster's in-memory store, locked against the API
// server's requests.
func (w *Server) Client() inmemoryclient.Client { return w.locked() }

func (w *Server) locked() *lockedClient {
	return &lockedClient{c: w.mem.GetResourceGroup(w.rg).GetClient(), mu: &w.store}
}

// Addr is host:port of the endpoint.
func (w *Server) Addr() *net.TCPAddr { return w.addr }

// certificate picks the etcd member's serving certificate when a port
// forward names that member, the API server's otherwise.
func (w *Server) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.etcdCerts[hello.ServerName]; ok {
		return c, nil
	}
	if w.apiCert == nil {
		return nil, errors.New("no API server")
	}
	return w.apiCert, nil
}

// addAPIServer registers a control plane's API server; the first one makes
// the endpoint answer.
func (w *Server) AddAPIServer(pod string, ca *x509.Certificate, caKey crypto.Signer) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.apiCert == nil {
		cfg := &certs.Config{
			CommonName: "kube-apiserver",
			AltNames:   certs.AltNames{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}},
			Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		c, err := Signed(cfg, w.key, ca, caKey)
		if err != nil {
			return fmt.Errorf("API server certificate of %s: %w", w.rg, err)
		}
		w.apiCert = c
	}
	if w.listener == nil {
		l, err := net.Listen("tcp", w.addr.String())
		if err != nil {
			return fmt.Errorf("reopen the endpoint of %s: %w", w.rg, err)
		}
		w.listener = &gatedListener{Listener: l, w: w}
		w.serve()
	}
	w.apiServers[pod] = true
	return nil
}

// removeAPIServer unregisters an API server; when none is left every open
// connection is cut and the port closed.
func (w *Server) RemoveAPIServer(pod string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.apiServers, pod)
	if len(w.apiServers) > 0 {
		return
	}
	for c := range w.conns {
		_ = c.Close()
	}
	if w.listener != nil {
		_ = w.listener.Close()
		w.listener = nil
	}
}

// setQuorum records whether etcd has a quorum. Losing it cuts every open
// connection, as kube-apiserver ends its watches on "etcdserver: no
// leader", and every request until it is back fails with that error.
func (w *Server) SetQuorum(ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.noQuorum == !ok {
		return
	}
	w.noQuorum = !ok
	if !ok {
		for c := range w.conns {
			_ = c.Close()
		}
	}
}

func (w *Server) HasQuorum() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.noQuorum
}

// canStore tells whether a write through the API would succeed: an API
// server runs and etcd has a quorum.
func (w *Server) CanStore() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.noQuorum && len(w.apiServers) > 0
}

// writeNoLeader answers as kube-apiserver does when etcd has no leader: the
// storage error, unwrapped, as a 500 Status.
func writeNoLeader(log logr.Logger, rw http.ResponseWriter) {
	writeJSON(log, rw, http.StatusInternalServerError, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: "etcdserver: no leader",
		Reason: metav1.StatusReasonUnknown, Code: http.StatusInternalServerError,
	})
}

func (w *Server) HasAPIServer(pod string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.apiServers[pod]
}

// addEtcdMember makes an etcd member reachable through port forwards.
func (w *Server) AddEtcdMember(pod string, ca *x509.Certificate, caKey crypto.Signer) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.etcdCerts[pod]; ok {
		return nil
	}
	cfg := &certs.Config{
		CommonName: pod,
		AltNames:   certs.AltNames{DNSNames: []string{"localhost", pod}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}},
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	c, err := Signed(cfg, w.key, ca, caKey)
	if err != nil {
		return fmt.Errorf("etcd certificate of %s: %w", pod, err)
	}
	w.etcdCerts[pod] = c
	return nil
}

// removeEtcdMember makes a member unreachable: a port forward to it fails
// the TLS handshake, as a dial to a dead etcd would fail.
func (w *Server) RemoveEtcdMember(pod string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.etcdCerts, pod)
}

func (w *Server) HasEtcdMember(pod string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.etcdCerts[pod]
	return ok
}

// close stops serving and cuts every connection, watches and port
// forwards included: the lab is going away, nothing is drained.
func (w *Server) Close() error {
	err := w.srv.Close()
	w.mu.Lock()
	for c := range w.conns {
		_ = c.Close()
	}
	w.mu.Unlock()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// NewKey is the key of a lab server: ECDSA P-256, whose signatures and
// handshakes cost a fraction of RSA's (a 20-cluster lab spent a quarter
// of its CPU on RSA).
func NewKey() (crypto.Signer, error) {
	return certs.NewSigner(bootstrapv1.EncryptionAlgorithmECDSAP256)
}

func Signed(cfg *certs.Config, key crypto.Signer, ca *x509.Certificate, caKey crypto.Signer) (*tls.Certificate, error) {
	cert, err := cfg.NewSignedCert(key, ca, caKey)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}, nil
}

// gatedListener refuses connections while no API server runs and tracks
// the accepted ones, so they can be cut when the last one stops.
type gatedListener struct {
	net.Listener
	w *Server
}

func (g *gatedListener) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return nil, err
		}
		g.w.mu.Lock()
		up := len(g.w.apiServers) > 0
		if up {
			g.w.conns[c] = true
		}
		g.w.mu.Unlock()
		if !up {
			_ = c.Close()
			continue
		}
		return &trackedConn{Conn: c, w: g.w}, nil
	}
}

type trackedConn struct {
	net.Conn
	w    *Server
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.w.mu.Lock()
		delete(c.w.conns, c.Conn)
		c.w.mu.Unlock()
	})
	return c.Conn.Close()
}

// NewStore starts the in-memory store of workload clusters: a resource
// group per cluster (AddResourceGroup), each served by a Server.
func NewStore(ctx context.Context) (inmemoryruntime.Manager, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme, admissionv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("in-memory scheme: %w", err)
		}
	}
	m := inmemoryruntime.NewManager(s)
	if err := m.Start(ctx); err != nil {
		return nil, fmt.Errorf("start in-memory clusters: %w", err)
	}
	return m, nil
}
