package providers

import (
	"context"
	"time"
)

// EtcdLeadership holds etcd's leadership on a control-plane node's member.
// A stuck leader is seed 003's state after a crash: the member keeps
// leadership and answers its clients, but its peers cannot reach it, so no
// membership change commits and a new control plane cannot join. Freeing
// it is the seed's runbook, `etcdctl move-leader` to a member that can
// serve.
type EtcdLeadership interface {
	// SetLeaderStuck makes m's member the leader and keeps it there
	// (stuck), or moves leadership to another live member.
	SetLeaderStuck(ctx context.Context, m Object, stuck bool) error
}

// EtcdMembers changes how etcd members join a control plane. kubeadm
// join adds a new control plane's member as a learner, then starts its
// etcd static pod, which promotes it once it has caught up; a member that
// is slow to start (an image pull, a slow disk) leaves an unnamed
// learner in the member list, the window of cluster-api #14197.
type EtcdMembers interface {
	// SetMemberStartDelay has the members that join m's cluster from now
	// on start d after they were added as learners (zero: at once).
	SetMemberStartDelay(ctx context.Context, m Object, d time.Duration) error
}
