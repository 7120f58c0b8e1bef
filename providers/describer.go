package providers

// Describer is optional: it tells how to reach the provider again, so that
// `faultline recover` can undo a crashed run's faults. Secrets are never part
// of a ProviderRef; they come from the environment at recovery time.
type Describer interface {
	Ref() ProviderRef
}

// ProviderRef is what a journal records about the provider. Each provider
// package owns the meaning of its Config as a typed record (vsphere.Record,
// capi.Record, kind.Record) that writes and reads it; nothing else reads
// the keys.
type ProviderRef struct {
	Name string `json:"name"`
	// Target names what the provider reaches (a vCenter URL, a management
	// cluster's API server, a kind cluster): runs with the same Target act
	// on the same objects.
	Target string            `json:"target,omitempty"`
	Config map[string]string `json:"config,omitempty"`
}
