package labconfig

// A Difference is one way the compiled stack (the four managers'
// controllers in faultline's process) differs, on purpose, from the same
// release's own managers run with their main.go defaults.
type Difference struct {
	// Key names it in result.json's profileSettings (inProcess.KEY).
	Key string
	// What the compiled stack does, and why.
	What string
}

// InProcess are the differences made on purpose; nothing else differs.
// The profile's timings and feature gates (Knobs) apply to every stack
// and are not listed here. providers/lab/management/wiring_test.go reads
// each release's main.go from the module cache and fails when it
// registers a controller, webhook, CRD migration or reconciler field, or
// sets a concurrency, that the compiled stack lacks and this list does
// not explain.
var InProcess = []Difference{
	{"managers", "the four managers run as one controller manager in faultline's process, leader election off and no health or metrics endpoint: one lab, one process, nothing to elect or probe"},
	{"webhookServer", "one webhook server on 127.0.0.1 serves the four managers' webhooks and conversions (each manager serves its own on every interface)"},
	{"clusterCache", "one ClusterCache, shared by the four managers' controllers, with the core manager's options, and the profile's connectRetry (each manager keeps its own, retrying after 30s)"},
	{"crdMigrator", "one CRD migrator with the four managers' objects (each manager migrates its own)"},
	{"secretMetadataCache", "the core manager's cache of Secrets' metadata (the ClusterResourceSet controller's) is one of the manager's caches, started and synced before the controllers and stopped after them; main.go adds it as a plain runnable, which the manager stops first, and a watch on it could then hold a stop for the whole grace period"},
	{"gatedControllers", "ClusterTopology, RuntimeSDK and their controllers and migrations left out: Alpha gates, off by default, as the managers leave them"},
}

// inProcessKnobs are InProcess as profileSettings entries.
func inProcessKnobs(out map[string]string) {
	for _, d := range InProcess {
		out["inProcess."+d.Key] = d.What
	}
}
