package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Report is one benchmark's HTML report: a header naming the command, time
// and machine, then sections of text, tables and inline SVG charts. The file
// is self-contained: no JavaScript, no external CSS or fonts, readable
// offline and attachable to a pull request.
type Report struct {
	Name     string // file name without extension: <dir>/<Name>.html and .json; letters, digits, '.', '_', '-'
	Title    string
	Command  string    // the exact command that produced it
	Started  time.Time // set by NewReport
	Machine  string    // set by NewReport: GOOS/GOARCH, CPU count, CPU model, Go version
	Sections []Section

	summary    any
	hasSummary bool
}

// Section is one part of a report. Text is plain text (never HTML); blank
// lines separate paragraphs. Any of Text, Table and Charts may be empty.
type Section struct {
	Title  string
	Text   string
	Table  *Table
	Charts []Chart
}

// Table is a plain table of strings; the first column is a row label.
type Table struct {
	Header []string
	Rows   [][]string
}

// NewReport starts a report stamped with the current time and this
// machine's description. command is what a reader runs to reproduce it;
// CommandLine() gives the current process's.
func NewReport(name, title, command string) *Report {
	return &Report{Name: name, Title: title, Command: command, Started: time.Now(), Machine: MachineDescription()}
}

// Add appends a section.
func (r *Report) Add(s Section) {
	r.Sections = append(r.Sections, s)
}

// SetSummary sets the value written as <Name>.json next to the HTML file and
// shown at the end of the report; pass the same value to PrintSummary.
func (r *Report) SetSummary(v any) {
	r.summary = v
	r.hasSummary = true
}

var reportNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// WriteHTML creates dir if needed and writes <dir>/<Name>.html, and
// <dir>/<Name>.json when a summary was set. Files are written to a temporary
// name and renamed, so a reader never sees half a report. It returns the
// HTML file's path.
func (r *Report) WriteHTML(dir string) (path string, err error) {
	if !reportNamePattern.MatchString(r.Name) || len(r.Name) > 100 {
		return "", fmt.Errorf("bench: report name %q must be 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit", r.Name)
	}
	var summaryJSON []byte
	if r.hasSummary {
		summaryJSON, err = json.MarshalIndent(r.summary, "", "  ")
		if err != nil {
			return "", fmt.Errorf("bench: encode summary of report %q: %w", r.Name, err)
		}
		summaryJSON = append(summaryJSON, '\n')
	}
	var page bytes.Buffer
	if err := r.render(&page, summaryJSON); err != nil {
		return "", fmt.Errorf("bench: render report %q: %w", r.Name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bench: create report directory %s: %w", dir, err)
	}
	path = filepath.Join(dir, r.Name+".html")
	if err := writeFileAtomic(path, page.Bytes()); err != nil {
		return "", err
	}
	if r.hasSummary {
		if err := writeFileAtomic(filepath.Join(dir, r.Name+".json"), summaryJSON); err != nil {
			return "", err
		}
	}
	return path, nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	return nil
}

// PrintSummary writes v as one compact JSON object on one line. Every
// benchmark prints it as its LAST stdout line, which is what scripts and the
// CI smoke tests parse (see ParseSummary). v must encode as a JSON object.
func PrintSummary(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // compact, ends with '\n', no other newline
		return fmt.Errorf("bench: encode summary %T: %w", v, err)
	}
	if buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return fmt.Errorf("bench: summary must encode as a JSON object, got %T: %.40s", v, buf.String())
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("bench: write summary: %w", err)
	}
	return nil
}

// ParseSummary returns the JSON object on the last non-empty line of a
// benchmark's stdout. Smoke tests use it with MissingKeys.
func ParseSummary(stdout []byte) (map[string]any, error) {
	text := strings.TrimRight(string(stdout), " \t\r\n")
	if text == "" {
		return nil, errors.New("bench: no summary: stdout is empty")
	}
	last := text[strings.LastIndexByte(text, '\n')+1:]
	var summary map[string]any
	if err := json.Unmarshal([]byte(last), &summary); err != nil {
		return nil, fmt.Errorf("bench: last stdout line is not a JSON object: %.80q: %w", last, err)
	}
	if summary == nil {
		return nil, fmt.Errorf("bench: last stdout line is not a JSON object: %.80q", last)
	}
	return summary, nil
}

// MissingKeys returns the keys absent from summary. A key may be a dotted
// path into nested objects, such as "ours.latency.p99_ms".
func MissingKeys(summary map[string]any, keys ...string) []string {
	var missing []string
	for _, key := range keys {
		var cur any = summary
		for _, part := range strings.Split(key, ".") {
			obj, ok := cur.(map[string]any)
			if !ok {
				cur = nil
				break
			}
			if cur, ok = obj[part]; !ok {
				cur = nil
				break
			}
		}
		if cur == nil {
			missing = append(missing, key)
		}
	}
	return missing
}

// CommandLine returns the current process's command line, shell-quoted
// where needed, for Report.Command.
func CommandLine() string {
	args := make([]string, len(os.Args))
	for i, a := range os.Args {
		args[i] = shellQuote(a)
	}
	return strings.Join(args, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// MachineDescription describes this machine for a report, for example
// "linux/amd64, 2 CPUs (AMD EPYC 7B13), go1.26.8".
func MachineDescription() string {
	cpus := strconv.Itoa(runtime.NumCPU()) + " CPUs"
	if model := cpuModel(); model != "" {
		cpus += " (" + model + ")"
	}
	return fmt.Sprintf("%s/%s, %s, %s", runtime.GOOS, runtime.GOARCH, cpus, runtime.Version())
}

// cpuModel reads the first "model name" from /proc/cpuinfo; "" elsewhere.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.Join(strings.Fields(value), " ")
		}
	}
	return ""
}

type pageSection struct {
	Title      string
	Paragraphs []string
	Table      *Table
	Charts     []template.HTML
}

func (r *Report) render(w io.Writer, summaryJSON []byte) error {
	sections := make([]pageSection, len(r.Sections))
	for i, s := range r.Sections {
		ps := pageSection{Title: s.Title, Table: s.Table}
		for p := range strings.SplitSeq(strings.ReplaceAll(s.Text, "\r\n", "\n"), "\n\n") {
			if p = strings.TrimSpace(p); p != "" {
				ps.Paragraphs = append(ps.Paragraphs, p)
			}
		}
		for _, c := range s.Charts {
			// renderSVG escapes every piece of text it writes.
			ps.Charts = append(ps.Charts, template.HTML(renderSVG(c)))
		}
		sections[i] = ps
	}
	return pageTemplate.Execute(w, map[string]any{
		"Report":   r,
		"Started":  r.Started.Format(time.RFC3339),
		"Elapsed":  time.Since(r.Started).Round(time.Second).String(),
		"Sections": sections,
		"Summary":  string(summaryJSON),
	})
}

var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Report.Title}}</title>
<style>
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2327; max-width: 960px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #dde1e4; padding-bottom: .2em; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .1em 1em; color: #4a545c; font-size: .92em; }
dl.meta dt { font-weight: 600; }
dl.meta dd { margin: 0; }
code, pre { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: #f4f6f8; padding: .8em; overflow-x: auto; border-radius: 4px; }
table { border-collapse: collapse; margin: 1em 0; font-size: .92em; }
th, td { border: 1px solid #dde1e4; padding: .3em .7em; }
th { background: #f4f6f8; text-align: left; }
td { text-align: right; font-variant-numeric: tabular-nums; }
td:first-child { text-align: left; }
figure { margin: 1.2em 0; }
svg { width: 100%; height: auto; max-width: 880px; display: block; }
</style>
</head>
<body>
<h1>{{.Report.Title}}</h1>
<dl class="meta">
<dt>Command</dt><dd><code>{{.Report.Command}}</code></dd>
<dt>Started</dt><dd>{{.Started}} (report written {{.Elapsed}} later)</dd>
<dt>Machine</dt><dd>{{.Report.Machine}}</dd>
</dl>
{{range .Sections}}
<section>
{{if .Title}}<h2>{{.Title}}</h2>{{end}}
{{range .Paragraphs}}<p>{{.}}</p>
{{end}}
{{with .Table}}<table>
{{if .Header}}<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>{{end}}
<tbody>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>{{end}}
{{range .Charts}}<figure>{{.}}</figure>
{{end}}
</section>
{{end}}
{{if .Summary}}<section>
<h2>Summary (JSON)</h2>
<pre>{{.Summary}}</pre>
</section>{{end}}
</body>
</html>
`))
