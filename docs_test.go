package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agui-relay/agui-relay/metrics"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/translate"
)

// The docs are checked against the code so that they stay true: every flag
// of every command and every route option is in docs/reference.md, and the
// translation steps section of docs/troubleshooting.md is generated from
// translate.Registry() and the steps' doc comments. After changing a step,
// regenerate it with
//
//	UPDATE_DOCS=1 go test -run TestTroubleshootingStepsAreGenerated .

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commandFlags returns the flags a command's --help lists.
func commandFlags(t *testing.T, cmd string) []string {
	t.Helper()
	var out strings.Builder
	// (translate answers --help with exit 2, the others with 0.)
	if code := run([]string{cmd, "--help"}, nil, io.Discard, &out); code != 0 && code != 2 || !strings.Contains(out.String(), "usage: agui-relay") {
		t.Fatalf("%s --help: exit %d, %q", cmd, code, out.String())
	}
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(out.String(), -1) {
		flags = append(flags, m[1])
	}
	return flags
}

func TestReferenceListsEveryFlag(t *testing.T) {
	ref := readDoc(t, "docs/reference.md")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, cmd := range names {
		// The command's section: from its heading to the next one.
		_, section, ok := strings.Cut(ref, "\n### `"+cmd)
		if !ok {
			t.Errorf("docs/reference.md has no section \"### `%s …`\"", cmd)
			continue
		}
		section, _, _ = strings.Cut(section, "\n### ")
		flags := commandFlags(t, cmd)
		if cmd == "serve" && len(flags) < 15 {
			t.Fatalf("serve --help lists %d flags: %v", len(flags), flags)
		}
		for _, f := range flags {
			if !strings.Contains(section, "`--"+f+"`") {
				t.Errorf("docs/reference.md, %s: flag --%s is not documented", cmd, f)
			}
			if cmd == "serve" && !strings.Contains(section, "`"+EnvName(f)+"`") {
				t.Errorf("docs/reference.md, serve: %s (the environment variable of --%s) is not documented", EnvName(f), f)
			}
		}
	}
}

// routeOptions lists the keys of a route in the config file, from the JSON
// tags of routeFile ("timeouts.idle" for nested ones).
func routeOptions(typ reflect.Type, prefix string) []string {
	var opts []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() == reflect.Struct {
			opts = append(opts, routeOptions(f.Type, prefix+name+".")...)
			continue
		}
		opts = append(opts, prefix+name)
	}
	return opts
}

func TestReferenceListsEveryRouteOption(t *testing.T) {
	ref := readDoc(t, "docs/reference.md")
	opts := routeOptions(reflect.TypeFor[routeFile](), "")
	if len(opts) < 12 {
		t.Fatalf("route options %v", opts)
	}
	for _, o := range opts {
		if !strings.Contains(ref, "`"+o+"`") {
			t.Errorf("docs/reference.md: route option %s is not documented", o)
		}
	}
	// The documented example is a routes file the relay accepts.
	example, ok := codeBlock(ref, "yaml")
	if !ok {
		t.Fatal("docs/reference.md has no yaml example")
	}
	routes, err := parseRoutes([]byte(example), flagDefaults(t))
	if err != nil || len(routes) < 2 {
		t.Errorf("the example routes file: %v, %d routes", err, len(routes))
	}
}

func TestReferenceListsEveryMetric(t *testing.T) {
	ref := readDoc(t, "docs/reference.md")
	_, section, _ := strings.Cut(ref, "\n## Metrics\n")
	descs := make(chan *prometheus.Desc, 64)
	go func() {
		metrics.New(metrics.Options{NoRuntime: true}).Registry().Describe(descs)
		close(descs)
	}()
	n := 0
	for d := range descs {
		m := regexp.MustCompile(`fqName: "([a-z_]+)"`).FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("desc %s", d)
		}
		n++
		if !strings.Contains(section, "`"+m[1]+"`") {
			t.Errorf("docs/reference.md, Metrics: %s is not documented", m[1])
		}
	}
	if n < 10 {
		t.Errorf("%d metrics described", n)
	}
}

// stepDocs reads the doc comment of every step declared in translate/, by
// step name.
func stepDocs(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("translate/*.go")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				doc := vs.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				for _, v := range vs.Values {
					if name := stepName(v); name != "" && doc != nil {
						docs[name] = doc.Text()
					}
				}
			}
		}
	}
	return docs
}

// stepName returns the Name of a &Step{…} literal, "" for anything else.
func stepName(e ast.Expr) string {
	u, ok := e.(*ast.UnaryExpr)
	if !ok {
		return ""
	}
	cl, ok := u.X.(*ast.CompositeLit)
	if !ok {
		return ""
	}
	if id, ok := cl.Type.(*ast.Ident); !ok || id.Name != "Step" {
		return ""
	}
	for _, el := range cl.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
			if lit, ok := kv.Value.(*ast.BasicLit); ok {
				s, _ := strconv.Unquote(lit.Value)
				return s
			}
		}
	}
	return ""
}

// whoUpgrades says which side to upgrade so that a step no longer runs.
func whoUpgrades(s *translate.Step) string {
	since := s.Since.String()
	if s.Python {
		return "the producer (the agent): the ag-ui-protocol release each warning names"
	}
	if s.Since.IsZero() {
		return "nothing: the step serves every version"
	}
	lib := "an SDK release"
	if s.Since == negotiate.Current {
		lib = "@ag-ui/core"
	}
	switch {
	case s.Direction == translate.Events && s.Kind == translate.Downgrade:
		return "the consumer (the UI): @ag-ui/client " + since + " or newer"
	case s.Direction == translate.Events:
		return "the producer (the agent): " + lib + " " + since + " or newer, which emits the replacement itself"
	case s.Kind == translate.Downgrade:
		return "the producer (the agent): @ag-ui/core " + since + " or newer"
	}
	return "the consumer (the UI): @ag-ui/client " + since + " or newer, which sends the replacement itself"
}

// stepsSection renders the generated part of docs/troubleshooting.md.
func stepsSection(t *testing.T) string {
	docs := stepDocs(t)
	var b strings.Builder
	b.WriteString("<!-- steps:begin (generated by docs_test.go from translate.Registry(); UPDATE_DOCS=1 go test -run TestTroubleshootingStepsAreGenerated . rewrites it) -->\n")
	for _, dir := range []translate.Direction{translate.Events, translate.Input} {
		fmt.Fprintf(&b, "\n#### Direction: %s\n\n", map[translate.Direction]string{
			translate.Events: "events (the producer's stream, on its way to the consumer)",
			translate.Input:  "input (the consumer's RunAgentInput, on its way to the producer)",
		}[dir])
		b.WriteString("| step | kind | runs for | warns | what it does | upgrade to stop it |\n|---|---|---|---|---|---|\n")
		for _, s := range translate.Registry() {
			if s.Direction != dir {
				continue
			}
			runs := "every run"
			switch {
			case s.Python:
				runs = "producers named by their Python release (ag-ui-protocol@X.Y.Z)"
			case s.Since.IsZero():
			case s.Kind == translate.Downgrade && dir == translate.Events:
				runs = "consumers before " + s.Since.String()
			case s.Kind == translate.Downgrade:
				runs = "producers before " + s.Since.String()
			case dir == translate.Events:
				runs = "consumers at " + s.Since.String() + " or newer, when the producer sends the retired shape"
			default:
				runs = "producers at " + s.Since.String() + " or newer, when the consumer sends the retired shape"
			}
			warns := "no (lossless)"
			if s.Lossy {
				warns = "**yes** (lossy)"
			}
			name := "`" + s.Name + "`"
			if s.Lossy {
				name = "[" + name + "](#" + s.Name + ")"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", name, s.Kind, runs, warns,
				strings.ReplaceAll(s.Description, "|", "\\|"), whoUpgrades(s))
		}
	}
	b.WriteString("\n#### Each lossy step\n")
	for _, s := range translate.Registry() {
		if !s.Lossy {
			continue
		}
		doc := strings.TrimSpace(docs[s.Name])
		if doc == "" {
			t.Errorf("step %s has no doc comment in translate/", s.Name)
		}
		// The comment's first word is the Go name of the step: replace it
		// with the step's own name, as the logs show it.
		if i := strings.IndexByte(doc, ' '); i > 0 {
			doc = "`" + s.Name + "`" + doc[i:]
		}
		fmt.Fprintf(&b, "\n##### %s\n\n", s.Name)
		fmt.Fprintf(&b, "%s, %s, %s. **Upgrade:** %s.\n\n", s.Kind, s.Direction, sinceWords(s), whoUpgrades(s))
		b.WriteString(doc + "\n")
	}
	b.WriteString("\n<!-- steps:end -->\n")
	return b.String()
}

func sinceWords(s *translate.Step) string {
	if s.Python {
		return "producers named by their Python release"
	}
	if s.Since.IsZero() {
		return "every version"
	}
	return "the shape is new in " + s.Since.String()
}

func TestTroubleshootingStepsAreGenerated(t *testing.T) {
	const path = "docs/troubleshooting.md"
	doc := readDoc(t, path)
	want := stepsSection(t)
	begin := strings.Index(doc, "<!-- steps:begin")
	end := strings.Index(doc, "<!-- steps:end -->\n")
	if begin < 0 || end < begin {
		t.Fatalf("%s has no <!-- steps:begin … --> … <!-- steps:end --> section", path)
	}
	got := doc[begin : end+len("<!-- steps:end -->\n")]
	if got != want {
		if os.Getenv("UPDATE_DOCS") != "" {
			if err := os.WriteFile(path, []byte(doc[:begin]+want+doc[end+len("<!-- steps:end -->\n"):]), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: steps section rewritten", path)
			return
		}
		t.Errorf("%s: the steps section is not what translate.Registry() gives; run UPDATE_DOCS=1 go test -run TestTroubleshootingStepsAreGenerated .", path)
	}
	for _, s := range translate.Registry() {
		if s.Lossy && !strings.Contains(doc, "##### "+s.Name+"\n") {
			t.Errorf("%s: lossy step %s has no section", path, s.Name)
		}
	}
}

func TestReadme(t *testing.T) {
	readme := readDoc(t, "README.md")
	// It starts with the two commands.
	first, _ := codeBlock(readme, "sh")
	if !strings.HasPrefix(first, "go run .") || !strings.Contains(first, "\nmake test") {
		t.Errorf("the README's first commands are %q, want go run . and make test", first)
	}
	// Its routes example loads.
	example, ok := codeBlock(readme, "yaml")
	if !ok {
		t.Fatal("README.md has no yaml example")
	}
	routes, err := parseRoutes([]byte(example), flagDefaults(t))
	if err != nil || len(routes) != 2 || !routes[0].stripPrefix || routes[0].producerVersion.String() != "0.0.40" || routes[1].consumerVersion.String() != "0.0.45" {
		t.Errorf("the README's routes example: %v, %+v", err, routes)
	}
	// Its links to files of the repository lead somewhere.
	for _, m := range regexp.MustCompile(`\]\(((?:docs|deploy|bench)/[^)#]+)`).FindAllStringSubmatch(readme, -1) {
		if _, err := os.Stat(m[1]); err != nil {
			t.Errorf("README.md links to %s: %v", m[1], err)
		}
	}
}

// codeBlock returns the body of doc's first code block fenced as lang, and
// whether there is one.
func codeBlock(doc, lang string) (string, bool) {
	_, body, ok := strings.Cut(doc, "```"+lang+"\n")
	body, _, _ = strings.Cut(body, "```")
	return body, ok
}
