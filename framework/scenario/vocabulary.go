package scenario

import "github.com/faultline-dev/faultline/providers"

// Vocabulary is every fault and probe a scenario may name, by name. The
// engine defines it (engine.Vocabulary) beside what each word does; the
// language checks a file against it when the file loads.
type Vocabulary struct {
	Faults map[string]Word
	Probes map[string]Word
}

// Word is one fault or probe as a scenario file names it.
type Word struct {
	// Capability is what spec.requires must list for the word to be used.
	Capability providers.Capability
	// Args are the params (of a fault) or args (of a probe) it takes.
	Args []string
	// Summary says in one line what it does, for `faultline list`.
	Summary string
	// Check, when set, validates the params or args when the file loads.
	Check func(args map[string]string) []ArgError
	// TakesEtcd, for a fault, tells whether with these params it takes
	// down the etcd member of a control plane it hits (for the quorum
	// check of spec.lab).
	TakesEtcd func(params map[string]string) bool
	// Standalone, for a fault, says it may be given no target when its
	// params set cluster: management.
	Standalone bool
	// Untargeted, for a fault, says it acts on the management cluster as
	// a whole (an upgrade of its controllers) and takes no target.
	Untargeted bool
}

// ArgError is a problem with one param or arg of a word, found when the
// file loads.
type ArgError struct {
	Arg string
	Msg string
}
