package workloadapi_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"strconv"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudv1 "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/cloud/api/v1alpha1"

	"github.com/faultline-dev/faultline/providers/lab/workloadapi"
	"github.com/faultline-dev/faultline/providers/lab/workloadapi/workloadapitest"
)

// An etcd client sees kubeadm's learners as etcd shows them: one not
// started yet without a name, a started one named and still a learner,
// and removing the unstarted one (as KCP v1.13 does, cluster-api #14197)
// takes it out of the list for good.
func TestEtcdLearners(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, _, _ := workloadapitest.Start(t, ctx, nil)
	cluster := etcdClient(t, ctx, w, "etcd-cp1")
	addMember(t, ctx, w, "etcd-cp1", 11, true)

	w.AddLearner(22, "https://cp2:2380")
	members := memberList(t, ctx, cluster)
	if m := members[22]; m == nil || m.Name != "" || !m.IsLearner || len(m.ClientURLs) != 0 {
		t.Fatalf("unstarted learner 22: got %+v, want an unnamed learner without client URLs", m)
	}
	if m := members[11]; m == nil || m.Name != "cp1" || m.IsLearner {
		t.Fatalf("member 11: got %+v, want the voter cp1", m)
	}

	if _, err := cluster.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: 22}); err != nil {
		t.Fatalf("remove the unstarted learner: %v", err)
	}
	if !w.LearnerRemoved(22) {
		t.Error("the removed learner is not recorded as removed: its member would start")
	}
	if members := memberList(t, ctx, cluster); members[22] != nil || len(members) != 1 {
		t.Errorf("after the removal: got %v, want member 11 alone", members)
	}

	w.AddLearner(33, "https://cp3:2380")
	addMember(t, ctx, w, "etcd-cp3", 33, false)
	w.StartLearner(33)
	if m := memberList(t, ctx, cluster)[33]; m == nil || m.Name != "cp3" || !m.IsLearner {
		t.Fatalf("started learner 33: got %+v, want cp3, still a learner", m)
	}
	w.PromoteLearner(33)
	if m := memberList(t, ctx, cluster)[33]; m == nil || m.IsLearner {
		t.Fatalf("promoted member 33: got %+v, want a voter", m)
	}
	if _, err := cluster.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: 99}); err == nil {
		t.Error("removing a member etcd does not have succeeded")
	}
}

// etcdClient dials the member pod's etcd through the endpoint, as KCP's
// port forward reaches it (the member's name as TLS server name and
// authority).
func etcdClient(t *testing.T, ctx context.Context, w *workloadapi.Server, pod string) pb.ClusterClient {
	t.Helper()
	ca, caKey := workloadapitest.CA(t, "etcd-ca")
	if err := w.AddEtcdMember(pod, ca, caKey); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	creds := credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: pod, MinVersion: tls.VersionTLS12})
	conn, err := grpc.NewClient(w.Addr().String(), grpc.WithTransportCredentials(creds), grpc.WithAuthority(pod))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return pb.NewClusterClient(conn)
}

// addMember creates the etcd pod of a member, as the node simulator does.
func addMember(t *testing.T, ctx context.Context, w *workloadapi.Server, pod string, id uint64, leader bool) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: pod, Namespace: metav1.NamespaceSystem,
		Labels: map[string]string{"component": "etcd", "tier": "control-plane"},
		Annotations: map[string]string{
			cloudv1.EtcdClusterIDAnnotationName: "7",
			cloudv1.EtcdMemberIDAnnotationName:  strconv.FormatUint(id, 10),
		},
	}}
	if leader {
		p.Annotations[cloudv1.EtcdLeaderFromAnnotationName] = time.Now().Format(time.RFC3339)
	}
	if err := w.Client().Create(ctx, p); err != nil {
		t.Fatal(err)
	}
}

func memberList(t *testing.T, ctx context.Context, c pb.ClusterClient) map[uint64]*pb.Member {
	t.Helper()
	resp, err := c.MemberList(ctx, &pb.MemberListRequest{})
	if err != nil {
		t.Fatalf("member list: %v", err)
	}
	out := map[uint64]*pb.Member{}
	for _, m := range resp.Members {
		out[m.ID] = m
	}
	return out
}
