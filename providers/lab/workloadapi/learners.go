package workloadapi

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"

	"github.com/go-logr/logr"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// Learners are the etcd members kubeadm added as learners and that are
// not promoted yet. kubeadm join adds a control plane's member as a
// learner (MemberAddAsLearner) before it writes the etcd static pod
// manifest, and promotes it once it has started and caught up. Until it
// starts, the member has no name and no client URLs; until it is
// promoted, it has no vote. Cluster API's in-memory etcd lists a member
// for each etcd pod, all of them voters, so the member list is completed
// here (etcdWithLearners) as a real etcd would answer it: what KCP reads
// through the etcd API, as it does on real nodes.
type learner struct {
	peerURL string
	// started: its etcd pod runs (the in-memory etcd lists it, by name).
	started bool
	// removed: a client removed it before it started (MemberRemove); it
	// can never start.
	removed bool
}

// AddLearner records a member added as a learner, not started yet.
func (w *Server) AddLearner(id uint64, peerURL string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.learners[id] = &learner{peerURL: peerURL}
}

// StartLearner records that the learner's etcd pod runs: it has a name
// now, and is still a learner.
func (w *Server) StartLearner(id uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l, ok := w.learners[id]; ok {
		l.started = true
	}
}

// PromoteLearner makes the learner a voting member (or forgets one that
// was removed).
func (w *Server) PromoteLearner(id uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.learners, id)
}

// LearnerRemoved tells whether a client removed the learner before it
// started.
func (w *Server) LearnerRemoved(id uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.learners[id]
	return ok && l.removed
}

// IsLearner tells whether member id is a learner (started or not).
func (w *Server) IsLearner(id uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.learners[id]
	return ok && !l.removed
}

// completeMembers adds what the in-memory etcd does not know to its
// member list: started learners are marked so, and learners not started
// yet are listed without a name or client URLs, as etcd lists them.
func (w *Server) completeMembers(resp *pb.MemberListResponse) {
	w.mu.Lock()
	defer w.mu.Unlock()
	listed := map[uint64]bool{}
	for _, m := range resp.Members {
		listed[m.ID] = true
		if l, ok := w.learners[m.ID]; ok && !l.removed {
			m.IsLearner = true
		}
	}
	for id, l := range w.learners {
		if !l.started && !l.removed && !listed[id] {
			resp.Members = append(resp.Members, &pb.Member{ID: id, PeerURLs: []string{l.peerURL}, IsLearner: true})
		}
	}
}

// removeUnstarted removes a learner that has not started, as etcd's
// MemberRemove does; it reports false for any other member, which the
// in-memory etcd removes through its pod.
func (w *Server) removeUnstarted(id uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.learners[id]
	if !ok || l.started || l.removed {
		return false
	}
	l.removed = true
	return true
}

// The two calls of etcd's Cluster service that learners change.
const (
	grpcMemberList   = "/etcdserverpb.Cluster/MemberList"
	grpcMemberRemove = "/etcdserverpb.Cluster/MemberRemove"
)

// etcdWithLearners serves the in-memory etcd (next) with the learners
// this server records: MemberList answers them, MemberRemove removes one
// that has not started. Every other call goes to next as it is.
func (w *Server) etcdWithLearners(log logr.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case grpcMemberList:
			rec := &grpcRecorder{rw: rw}
			next.ServeHTTP(rec, r)
			rec.finish(log, w.completeMembers)
		case grpcMemberRemove:
			body, err := io.ReadAll(r.Body)
			if err != nil {
				log.V(1).Info("read etcd MemberRemove", "error", err.Error())
				return
			}
			req := &pb.MemberRemoveRequest{}
			if msg, ok := grpcMessage(body); ok && req.Unmarshal(msg) == nil && w.removeUnstarted(req.ID) {
				log.Info("etcd: learner removed before it started", "cluster", w.rg, "member", fmt.Sprintf("%x", req.ID))
				writeGRPC(log, rw, &pb.MemberRemoveResponse{Header: &pb.ResponseHeader{}})
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(rw, r)
		default:
			next.ServeHTTP(rw, r)
		}
	})
}

// grpcMessage is the message of a unary gRPC body: one frame, a flag
// byte (0: not compressed), a 4-byte length and the message.
func grpcMessage(body []byte) ([]byte, bool) {
	if len(body) < 5 || body[0] != 0 {
		return nil, false
	}
	n := binary.BigEndian.Uint32(body[1:5])
	if uint32(len(body)-5) != n {
		return nil, false
	}
	return body[5:], true
}

// grpcFrame frames msg as grpcMessage reads it.
func grpcFrame(msg []byte) []byte {
	out := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(out[1:5], uint32(len(msg)))
	return append(out, msg...)
}

// writeGRPC answers a unary gRPC call with resp and status OK.
func writeGRPC(log logr.Logger, rw http.ResponseWriter, resp interface{ Marshal() ([]byte, error) }) {
	msg, err := resp.Marshal()
	if err != nil {
		log.Error(err, "encode etcd answer")
		return
	}
	h := rw.Header()
	h.Set("Content-Type", "application/grpc")
	h.Add("Trailer", "Grpc-Status")
	h.Add("Trailer", "Grpc-Message")
	rw.WriteHeader(http.StatusOK)
	if _, err := rw.Write(grpcFrame(msg)); err != nil {
		log.V(1).Info("write etcd answer", "error", err.Error())
	}
	h.Set("Grpc-Status", "0")
	h.Set("Grpc-Message", "")
}

// grpcRecorder holds back the body of a unary gRPC answer so that it can
// be changed; the headers and trailers go to rw as they are written (the
// trailers are sent when the handler returns, after the body).
type grpcRecorder struct {
	rw   http.ResponseWriter
	body bytes.Buffer
}

func (g *grpcRecorder) Header() http.Header         { return g.rw.Header() }
func (g *grpcRecorder) WriteHeader(status int)      { g.rw.WriteHeader(status) }
func (g *grpcRecorder) Write(b []byte) (int, error) { return g.body.Write(b) }

// Flush sends nothing: the body goes once it is complete.
func (g *grpcRecorder) Flush() {}

// finish changes the member list the body holds and sends it; a body
// that is not one uncompressed MemberListResponse (an error answer has
// none) goes as it is.
func (g *grpcRecorder) finish(log logr.Logger, change func(*pb.MemberListResponse)) {
	out := g.body.Bytes()
	resp := &pb.MemberListResponse{}
	if msg, ok := grpcMessage(out); ok && resp.Unmarshal(msg) == nil {
		change(resp)
		if b, err := resp.Marshal(); err == nil {
			out = grpcFrame(b)
		} else {
			log.Error(err, "encode etcd member list")
		}
	}
	if len(out) == 0 {
		return
	}
	if _, err := g.rw.Write(out); err != nil {
		log.V(1).Info("write etcd answer", "error", err.Error())
	}
}
