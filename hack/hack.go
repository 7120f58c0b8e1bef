// Package hack holds the project's scripts; a script a faultline binary
// runs itself is embedded here, so an installed binary needs no checkout.
package hack

import _ "embed"

// Lib is lib.sh, which every script sources from its own folder.
//
//go:embed lib.sh
var Lib string

// ReleaseManagers is release-managers.sh: it builds a Cluster API + CAPV
// stack's managers from their module sources (the lab runs it on a
// stack's first use).
//
//go:embed release-managers.sh
var ReleaseManagers string
