package providers

import (
	"context"
	"net/netip"
)

// Workloads is implemented by a provider whose workload cluster's nodes
// are in a network faultline made on this machine (the lab's docker
// network, kind's): a workload's disruption probe sends its requests to
// the Nodes' addresses there, and nowhere else.
type Workloads interface {
	// NodeNetwork is the network of scope's workload cluster's nodes: a
	// probe sends requests only to Node addresses inside it.
	NodeNetwork(ctx context.Context, scope Object) (netip.Prefix, error)
}
