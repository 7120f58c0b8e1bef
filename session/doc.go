// Package session turns a configuration (the CLI's flags, a suite's e2e
// config, a journal's provider record) into an open provider, and runs a
// scenario on it with its artifacts: Open, then Execute, then
// Session.Close. It is the one place that knows every provider: cmd, the
// suites and `faultline recover` open providers only through it.
//
// session may import the provider packages, the engine, the scenario
// language and artifacts; nothing of faultline imports session but cmd
// and suites.
package session
