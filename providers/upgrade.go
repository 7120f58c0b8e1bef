package providers

import "context"

// ManagementUpgrade is implemented by a provider that runs the management
// cluster's controllers itself (the lab) and can replace their release in
// place, as `clusterctl upgrade apply` does.
type ManagementUpgrade interface {
	// UpgradeManagement replaces the running Cluster API and CAPV release
	// with release (a name the provider lists, or CAPI+CAPV versions),
	// keeping every object; progress gets a line per stage. It refuses a
	// release older than the running one.
	UpgradeManagement(ctx context.Context, release string, progress func(string)) error
	// ManagementRelease names the release running now.
	ManagementRelease() string
}
