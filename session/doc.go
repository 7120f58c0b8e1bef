// Package session is faultline's front door: it turns a configuration
// (the CLI's flags, a suite's e2e config, a journal's provider record) into
// an open provider, and runs a scenario on it with its artifacts: Open,
// then Execute, then Session.Close. It is the one place that knows every
// provider (one switch on the name, driverFor): Open, the warm-lab Pool
// shared by `faultline run` and the suites, the adjustments a run makes to
// a scenario (Adjust), the scope check (Session.RequireScope), check's
// orchestration (OpenCheck), and recover's Reconnector, which reaches a
// journal's provider again from the typed record the provider owns
// (capi.Record, vsphere.Record, kind.JournalRecord).
//
// session may import the provider packages, the engine, the checks, the
// scenario language and artifacts; nothing of faultline imports session
// but cmd and suites.
package session
