// Package artifacts writes what a run leaves behind: result.json (the
// stable JSON of --output json), timeline.jsonl (one event a line, written
// as the run goes), junit.xml, report.html (a self-contained page with a
// timeline chart), dumps of the cluster on failure and, beside them, the
// run's journal.jsonl.
//
// It reads results and the provider contract (framework/engine, providers)
// and must not import a provider package, the session, cmd or suites.
package artifacts
