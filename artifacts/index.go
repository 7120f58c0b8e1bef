package artifacts

import (
	"html/template"
	"io"
	"path/filepath"
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
// passed, and a row per scenario with its verdict, time, reason and a link
// to its report.
func WriteIndex(w io.Writer, entries []IndexEntry) error {
	var results []*engine.Result
	for _, e := range entries {
		results = append(results, e.Result)
	}
	return indexPage.Execute(w, struct {
		Passed, Total int
		Entries       []IndexEntry
	}{Passed(results), len(results), entries})
}

var indexPage = template.Must(template.New("index").Funcs(template.FuncMap{
	"took": func(r *engine.Result) string {
		return r.FinishedAt.Sub(r.StartedAt).Round(100 * time.Millisecond).String()
	},
	"report": func(folder string) string { return filepath.ToSlash(filepath.Join(folder, ReportFile)) },
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
<table><tr><th>scenario</th><th>verdict</th><th>took</th><th>reason</th></tr>
{{range .Entries}}<tr><td>{{if .Folder}}<a href="{{report .Folder}}">{{.Result.Scenario}}</a>{{else}}{{.Result.Scenario}}{{end}}</td><td class="{{.Result.Verdict}}">{{.Result.Verdict}}</td><td>{{took .Result}}</td><td>{{.Result.Reason}}</td></tr>
{{end}}</table>
</body>
</html>
`))
