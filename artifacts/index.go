package artifacts

import (
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/faultline-dev/faultline/framework/engine"
)

// IndexFile is the page of a run of several scenarios.
const IndexFile = "index.html"

// IndexEntry is one scenario of a run of several: its result and its
// folder relative to the index ("" when it did not run).
type IndexEntry struct {
	Result *engine.Result
	Folder string
}

// WriteIndex writes the page of a run of several scenarios: how many
// passed, when (UTC), on which host with which faultline, and a row per
// scenario with its verdict, start, time, provider and release, reason
// and a link to its report.
func WriteIndex(w io.Writer, entries []IndexEntry) error {
	var results []*engine.Result
	var began time.Time
	var hosts, versions []string
	for _, e := range entries {
		results = append(results, e.Result)
		if began.IsZero() || e.Result.StartedAt.Before(began) {
			began = e.Result.StartedAt
		}
		if ri := e.Result.Run; ri != nil {
			hosts, versions = append(hosts, ri.Host), append(versions, ri.Faultline)
		}
	}
	return indexPage.Execute(w, struct {
		Passed, Total   int
		Began           string
		Hosts, Versions []string
		Entries         []IndexEntry
	}{Passed(results), len(results), began.UTC().Format("2006-01-02 15:04:05 UTC"), distinct(hosts), distinct(versions), entries})
}

// distinct are the values of vals but "", once each, sorted.
func distinct(vals []string) []string {
	out := slices.DeleteFunc(slices.Clone(vals), func(v string) bool { return v == "" })
	slices.Sort(out)
	return slices.Compact(out)
}

// releaseOf names the release r ran on, "" when it records none.
func releaseOf(r *engine.Result) string {
	rel := r.Release
	switch {
	case rel == nil:
		return ""
	case rel.UpgradedTo != nil:
		return releaseName(*rel) + " → " + releaseName(*rel.UpgradedTo)
	}
	return releaseName(*rel)
}

func releaseName(r engine.Release) string {
	if r.Stack != "" {
		return r.Stack
	}
	return r.ClusterAPI + "+" + r.CAPV
}

var indexPage = template.Must(template.New("index").Funcs(template.FuncMap{
	"took": func(r *engine.Result) string {
		return r.FinishedAt.Sub(r.StartedAt).Round(100 * time.Millisecond).String()
	},
	"report":  func(folder string) string { return filepath.ToSlash(filepath.Join(folder, ReportFile)) },
	"started": func(r *engine.Result) string { return r.StartedAt.UTC().Format("15:04:05") },
	"release": releaseOf,
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>faultline: {{.Passed}} of {{.Total}} scenarios passed</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; margin: 8px 0 20px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.pass { color: #2e7d32; font-weight: bold; } td.fail, td.error, td.timed-out, td.interrupted { color: #c62828; font-weight: bold; }
</style>
</head>
<body>
<h1>faultline: {{.Passed}} of {{.Total}} scenarios passed</h1>
<p>started {{.Began}}{{range .Hosts}} on {{.}}{{end}}{{range .Versions}}, faultline {{.}}{{end}}</p>
<table><tr><th>scenario</th><th>verdict</th><th>started (UTC)</th><th>took</th><th>provider</th><th>release</th><th>reason</th></tr>
{{range .Entries}}<tr><td>{{if .Folder}}<a href="{{report .Folder}}">{{.Result.Scenario}}</a>{{else}}{{.Result.Scenario}}{{end}}</td><td class="{{.Result.Verdict}}">{{.Result.Verdict}}</td><td>{{started .Result}}</td><td>{{took .Result}}</td><td>{{.Result.Provider}}</td><td>{{release .Result}}</td><td>{{.Result.Reason}}</td></tr>
{{end}}</table>
</body>
</html>
`))
