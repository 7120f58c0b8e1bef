// Package selection turns what a user names (scenario files, folders of
// them, catalogue names, a label selector over metadata.labels) into
// parsed scenarios, for faultline run, list and validate and for the
// suites alike.
//
// It may import the language (framework/scenario) and the engine's
// vocabulary, and the catalogue; never a provider, the artifacts, the CLI
// or the suites.
package selection
