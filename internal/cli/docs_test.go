package cli

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agui-relay/agui-relay/metrics"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/translate"
)

// The docs are checked against the code so that they stay true: every flag
// of every command and every route option is in docs/reference.md, and the
// translation steps section of docs/troubleshooting.md is generated from
// translate.Registry() and the steps' doc comments; every flag the README
// and docs/ name exists and every agui-relay command line they show parses;
// their links to files lead somewhere. After changing a step,
// regenerate it with
//
//	UPDATE_DOCS=1 go test -run TestTroubleshootingStepsAreGenerated ./internal/cli

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
	if code := run([]string{cmd, "--help"}, nil, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "usage: agui-relay") {
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
	b.WriteString("<!-- steps:begin (generated by internal/cli/docs_test.go from translate.Registry(); UPDATE_DOCS=1 go test -run TestTroubleshootingStepsAreGenerated ./internal/cli rewrites it) -->\n")
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
		t.Errorf("%s: the steps section is not what translate.Registry() gives; run UPDATE_DOCS=1 go test -run TestTroubleshootingStepsAreGenerated ./internal/cli", path)
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
	// go run runs every command; what it does not do is pass signals on.
	// The install line from the module path fails until the module is
	// published: the README says so beside it, with the clone's go install.
	if strings.Contains(readme, "only runs the relay") {
		t.Error("the README says go run . only runs the relay; go run . load and the other commands work too")
	}
	for _, l := range strings.Split(readme, "\n") {
		if strings.HasPrefix(l, "go install github.com/agui-relay/agui-relay@") &&
			(!strings.Contains(l, "until the module is published") || !strings.Contains(l, "go install .")) {
			t.Errorf("the README's install line %q does not say it fails until the module is published, nor give the clone's go install .", l)
		}
	}
	if !regexp.MustCompile(`(?m)^go install \. +# in a clone`).MatchString(readme) {
		t.Error("the README has no go install . for a clone")
	}
	// A README, not a manual (issue #32): the rest is in docs/.
	if n := strings.Count(readme, "\n"); n > 200 {
		t.Errorf("README.md has %d lines, want at most 200", n)
	}
}

// The README's and docs' links to files of the repository lead somewhere,
// and those to a heading of a Markdown file name one it has.
func TestDocsLinksLeadSomewhere(t *testing.T) {
	docs, _ := filepath.Glob("docs/*.md")
	n := 0
	for _, path := range append([]string{"README.md", "bench/README.md"}, docs...) {
		for _, m := range regexp.MustCompile(`\]\(([^)#:\s]*)(?:#([^)\s]+))?\)`).FindAllStringSubmatch(readDoc(t, path), -1) {
			target, anchor := m[1], m[2]
			if target == "" {
				target = filepath.Base(path)
			}
			target = filepath.Join(filepath.Dir(path), target)
			n++
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s: %v", path, m[1], err)
				continue
			}
			if anchor != "" && strings.HasSuffix(target, ".md") && !slices.Contains(headingAnchors(readDoc(t, target)), anchor) {
				t.Errorf("%s links to %s#%s: no such heading", path, m[1], anchor)
			}
		}
	}
	if n < 30 {
		t.Errorf("%d links checked", n)
	}
}

// headingAnchors returns the anchors GitHub gives a Markdown file's
// headings: lower case, punctuation but "-" and "_" removed, spaces as "-".
func headingAnchors(doc string) []string {
	var anchors []string
	inFence := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#"))) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchors = append(anchors, b.String())
	}
	return anchors
}

// codeBlock returns the body of doc's first code block fenced as lang, and
// whether there is one.
func codeBlock(doc, lang string) (string, bool) {
	_, body, ok := strings.Cut(doc, "```"+lang+"\n")
	body, _, _ = strings.Cut(body, "```")
	return body, ok
}

// The README and docs/ name flags and show command lines; both must stay
// true as flags come and go. The flags are read from each command's --help
// (so from its real flag set), never listed here.

// cmdFlags maps a command to its flags, each to whether it takes a value:
// --help prints a value's type after the name ("-listen string"), and
// nothing after a bool flag's.
func cmdFlags(t *testing.T) map[string]map[string]bool {
	t.Helper()
	all := map[string]map[string]bool{}
	for cmd := range commands {
		var out strings.Builder
		if code := run([]string{cmd, "--help"}, nil, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "usage: agui-relay") {
			t.Fatalf("%s --help: exit %d, %q", cmd, code, out.String())
		}
		flags := map[string]bool{}
		for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)( \S+)?`).FindAllStringSubmatch(out.String(), -1) {
			flags[m[1]] = m[2] != ""
		}
		all[cmd] = flags
	}
	if len(all["serve"]) < 15 || len(all["load"]) < 10 {
		t.Fatalf("flags read from --help: %v", all)
	}
	return all
}

// relayCommand returns the agui-relay command and its arguments when words
// run agui-relay (agui-relay …, ./agui-relay …, go run . …, or docker run …
// agui-relay …), ok false for anything else.
func relayCommand(words []string) (cmd string, args []string, ok bool) {
	for len(words) > 0 && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(words[0]) {
		words = words[1:]
	}
	switch {
	case len(words) == 0:
		return "", nil, false
	case words[0] == "agui-relay" || words[0] == "./agui-relay":
		words = words[1:]
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == ".":
		words = words[3:]
	case len(words) >= 2 && words[0] == "docker" && words[1] == "run":
		i := slices.Index(words, "agui-relay")
		if i < 0 {
			return "", nil, false
		}
		words = words[i+1:]
	default:
		return "", nil, false
	}
	if len(words) == 0 || strings.HasPrefix(words[0], "-") {
		return "serve", words, true
	}
	return words[0], words[1:], true
}

// docCommandWords splits a command line as sh would, quotes removed, up to the
// first operator (|, &, ;, <, >) or comment; alternatives of a synopsis
// (agui-relay check --profiles [FILE] | --url URL) are returned as the
// remaining segments.
func docCommandWords(line string) (words []string, alternatives [][]string) {
	var cur strings.Builder
	var quote rune
	inWord := false
	segment := &words
	flush := func() {
		if inWord {
			*segment = append(*segment, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		case r == '|':
			flush()
			alternatives = append(alternatives, nil)
			segment = &alternatives[len(alternatives)-1]
		case strings.ContainsRune("&;<>", r) || r == '#' && !inWord:
			flush()
			return words, alternatives
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	flush()
	return words, alternatives
}

// isPlaceholder says whether a value in a doc stands for one (V, FILE,
// <consumer>, URL2), so that only its flag, not its value, can be checked.
func isPlaceholder(v string) bool {
	return regexp.MustCompile(`^(<.*>|[A-Z][A-Z0-9_]*|.*….*)$`).MatchString(v)
}

// checkCommandLine reports what is wrong with one agui-relay command line a
// doc shows: an unknown command, a flag the command does not have, a flag
// without its value (when the line is whole: prose may name a command's
// flag, "`agui-relay versions --admin`"), or a value the command refuses (the
// command itself parses the line, with --help appended so that it stops
// there).
func checkCommandLine(flags map[string]map[string]bool, cmd string, args []string, whole bool) []string {
	if cmd == "help" {
		return nil
	}
	known, ok := flags[cmd]
	if !ok {
		if regexp.MustCompile(`^[a-z]+$`).MatchString(cmd) {
			return []string{fmt.Sprintf("unknown command %q", cmd)}
		}
		return nil // not a command line: "agui-relay check: …" output, "agui-relay <command>"
	}
	var problems, parsed []string
	for i := 0; i < len(args); i++ {
		a := strings.Trim(args[i], "[]")
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue // an argument
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "help" || name == "h" {
			continue
		}
		takesValue, ok := known[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s has no flag -%s", cmd, name))
			continue
		case !takesValue:
			parsed = append(parsed, "--"+name)
			continue
		case !hasValue && i+1 == len(args):
			if whole {
				problems = append(problems, fmt.Sprintf("%s --%s: no value", cmd, name))
			}
			continue
		case !hasValue:
			i++
			value = strings.Trim(args[i], "[]")
		}
		if !isPlaceholder(value) {
			parsed = append(parsed, "--"+name+"="+value)
		}
	}
	// Flags that parse lead to --help, which prints what it prints alone.
	var help, out strings.Builder
	helpCode := run([]string{cmd, "--help"}, nil, &help, &help)
	code := run(append(append([]string{cmd}, parsed...), "--help"), nil, &out, &out)
	if code != helpCode || out.String() != help.String() {
		first, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
		problems = append(problems, fmt.Sprintf("%s %s: %s", cmd, strings.Join(parsed, " "), first))
	}
	return problems
}

// docFlagProblems checks a Markdown document: every agui-relay command line
// in its code blocks and inline code parses, and every --flag it names in
// prose or output is a flag of some command. It returns what is wrong and
// how many command lines it checked.
func docFlagProblems(doc string, flags map[string]map[string]bool) (problems []string, commandLines int) {
	anyCommand := map[string]bool{"help": true}
	for _, fs := range flags {
		for f := range fs {
			anyCommand[f] = true
		}
	}
	// A line or inline code span whose first word is one of these is
	// another program's, and its flags are that program's (the relay's own
	// image after docker run aside).
	foreign := map[string]bool{
		"docker": true, "curl": true, "go": true, "make": true, "npm": true, "npx": true,
		"node": true, "kill": true, "git": true, "perf": true, "tcpdump": true,
		"systemctl": true, "uv": true, "nginx": true, "apt-get": true, "sudo": true,
	}
	mention := regexp.MustCompile(`(?:^|[^-\w])--([a-z][a-z0-9-]*)(\*?)`)
	checkMentions := func(text string) {
		for _, m := range mention.FindAllStringSubmatch(text, -1) {
			name := m[1]
			if m[2] == "*" && strings.HasSuffix(name, "-") { // "the --cors-* flags"
				if !slices.ContainsFunc(slices.Collect(maps.Keys(anyCommand)), func(f string) bool { return strings.HasPrefix(f, name) }) {
					problems = append(problems, fmt.Sprintf("no flag begins --%s", name))
				}
				continue
			}
			if !anyCommand[strings.TrimSuffix(name, "-")] {
				problems = append(problems, fmt.Sprintf("no command has a flag --%s", name))
			}
		}
	}
	// command checks one line or span: a command line of the relay is
	// parsed, another program's is left alone, anything else is text.
	command := func(text string, prompted, whole bool) {
		text = strings.TrimSpace(text)
		if prompted {
			if !strings.HasPrefix(text, "$ ") {
				checkMentions(text) // output
				return
			}
			text = text[2:]
		}
		text = regexp.MustCompile(`<[^<>\s][^<>]*>`).ReplaceAllString(text, "PLACEHOLDER")
		words, alternatives := docCommandWords(text)
		if cmd, args, ok := relayCommand(words); ok {
			commandLines++
			problems = append(problems, checkCommandLine(flags, cmd, args, whole)...)
			for _, alt := range alternatives {
				if len(alt) > 0 && strings.HasPrefix(strings.TrimLeft(alt[0], "["), "-") {
					problems = append(problems, checkCommandLine(flags, cmd, alt, whole)...)
				}
			}
			return
		}
		if len(words) > 0 && foreign[words[0]] {
			return
		}
		checkMentions(text)
	}
	fence := regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```")
	for _, m := range fence.FindAllStringSubmatch(doc, -1) {
		lang, body := m[1], strings.ReplaceAll(m[2], "\\\n", " ")
		for _, line := range strings.Split(body, "\n") {
			switch lang {
			case "console":
				command(line, true, true)
			case "", "sh", "bash":
				command(line, false, true)
			default: // yaml, ts, promql: no flags to check
			}
		}
	}
	prose := fence.ReplaceAllString(doc, "")
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(prose, -1) {
		command(strings.ReplaceAll(m[1], "\n", " "), false, false)
	}
	checkMentions(regexp.MustCompile("`[^`]+`").ReplaceAllString(prose, ""))
	return problems, commandLines
}

func TestDocsNameRealFlagsAndCommands(t *testing.T) {
	flags := cmdFlags(t)
	docs, err := filepath.Glob("docs/*.md")
	if err != nil || len(docs) < 4 {
		t.Fatalf("docs/*.md: %v, %v", docs, err)
	}
	lines := map[string]int{}
	for _, path := range append([]string{"README.md"}, docs...) {
		problems, n := docFlagProblems(readDoc(t, path), flags)
		for _, p := range problems {
			t.Errorf("%s: %s", path, p)
		}
		lines[path] = n
	}
	// The README shows a command for each use; the reference, every synopsis.
	if lines["README.md"] < 10 || lines["docs/reference.md"] < 6 {
		t.Errorf("agui-relay command lines checked: %v", lines)
	}
	t.Logf("agui-relay command lines checked: %v", lines)

	// What the check catches: each line below is wrong in one way.
	t.Run("made-up flags and values fail", func(t *testing.T) {
		doc := "Run `agui-relay --made-up-flag 3`, or `--another-made-up` for short.\n\n" +
			"```sh\n" +
			"go run . --upstream http://127.0.0.1:8000 --idle-timout 5m   # a typo\n" +
			"agui-relay check --record-dir runs FILE   # a serve flag given to check\n" +
			"./agui-relay --idle-timeout soon          # not a duration\n" +
			"agui-relay load -c 10 --out               # no value\n" +
			"agui-relay chek --url URL                 # no such command\n" +
			"docker run --rm agui-relay --listn 0.0.0.0:8080\n" +
			"```\n\n" +
			"```console\n$ agui-relay translate --to 1.0 --form 0.0.40 producer.sse\n```\n"
		want := []string{"made-up-flag", "another-made-up", "idle-timout", "check has no flag -record-dir",
			"idle-timeout=soon", "--out: no value", `unknown command "chek"`, "listn", "form"}
		got, _ := docFlagProblems(doc, flags)
		for _, w := range want {
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, w) }) {
				t.Errorf("no problem names %q; got %q", w, got)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%d problems, want %d: %q", len(got), len(want), got)
		}
	})
	t.Run("right lines pass", func(t *testing.T) {
		doc := "`agui-relay translate --to V [--from V] [FILE]`, the `--cors-*` flags, `docker kill --signal HUP`.\n\n" +
			"```sh\n" +
			"AGUI_RELAY_LOG_LEVEL=debug go run . --upstream http://127.0.0.1:8000 --producer-version ag-ui-protocol@0.1.10\n" +
			"agui-relay load -c 10,100 -d 5s --compare 'http://a/agent?x=1&y=2' 'http://b/agent'\n" +
			"agui-relay check --profiles [FILE] | --url URL [--input FILE]\n" +
			"go run ./bench/cmd/aguibench --quick\n" +
			"```\n"
		if got, n := docFlagProblems(doc, flags); len(got) > 0 || n != 4 {
			t.Errorf("%d command lines, problems in right lines: %q", n, got)
		}
	})
}

// Every fuzz target of the module is named in docs/reliability.md.
func TestReliabilityListsEveryFuzzTarget(t *testing.T) {
	doc := readDoc(t, "docs/reliability.md")
	n := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`).FindAllStringSubmatch(string(b), -1) {
			n++
			if !strings.Contains(doc, "`"+m[1]+"`") {
				t.Errorf("docs/reliability.md does not name the fuzz target %s (%s)", m[1], path)
			}
		}
		return nil
	})
	if err != nil || n < 10 {
		t.Errorf("%d fuzz targets found: %v", n, err)
	}
}

// The curl examples of the README and docs/uses.md are what the relay
// answers: each is run against the relay with its demo agent, and what the
// doc shows after it (the status line and headers of curl -i, then the body;
// "..." for lines left out) must be there, in that order. A block that
// starts a relay of its own is left out (it is configured otherwise).
func TestReadmeExamplesAreTheRelaysResponses(t *testing.T) {
	at, _, _ := startServe(t, nil)
	for path, want := range map[string]int{"README.md": 2, "docs/uses.md": 3} {
		if n := checkCurlExamples(t, path, at); n < want {
			t.Errorf("%s: %d curl examples checked, want %d", path, n, want)
		}
	}
}

func checkCurlExamples(t *testing.T, path string, at listening) int {
	n := 0
	for _, m := range regexp.MustCompile("(?ms)^```console\n(.*?)^```").FindAllStringSubmatch(readDoc(t, path), -1) {
		block := strings.ReplaceAll(m[1], "\\\n", " ")
		if regexp.MustCompile(`(?m)^\$ (\./)?(agui-relay|go run \.)( |$)`).MatchString(block) && strings.Contains(block, "&\n") {
			continue
		}
		for _, example := range strings.Split("\n"+block, "\n$ ")[1:] {
			command, shown, _ := strings.Cut(example, "\n")
			words, _ := docCommandWords(command)
			if len(words) == 0 || words[0] != "curl" {
				continue
			}
			n++
			var url, body string
			method, headers, include := http.MethodGet, map[string]string{}, false
			for i := 1; i < len(words); i++ {
				switch words[i] {
				case "-i":
					include = true
				case "-N":
				case "-H":
					i++
					k, v, _ := strings.Cut(words[i], ":")
					headers[k] = strings.TrimSpace(v)
				case "-d":
					i++
					method, body = http.MethodPost, words[i]
				default:
					url = "http://" + strings.NewReplacer("localhost:8080", at.relay, "localhost:9090", at.admin).Replace(words[i])
				}
			}
			req, err := http.NewRequest(method, url, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if include {
				header, rest, _ := strings.Cut(shown, "\n\n")
				lines := strings.Split(header, "\n")
				if want := fmt.Sprintf("HTTP/1.1 %d %s", resp.StatusCode, http.StatusText(resp.StatusCode)); lines[0] != want {
					t.Errorf("%s: %s: %q, the relay responds %q", path, command, lines[0], want)
				}
				for _, h := range lines[1:] {
					k, v, _ := strings.Cut(h, ": ")
					if resp.Header.Get(k) != v {
						t.Errorf("%s: %s: %s, the relay responds %q", path, command, h, resp.Header.Get(k))
					}
				}
				shown = rest
			}
			// The lines shown, in order, with "..." for any lines between.
			rest := string(got) + "\n"
			for _, line := range strings.Split(strings.TrimSpace(shown), "\n") {
				if line == "..." || line == "" {
					continue
				}
				i := strings.Index(rest, line+"\n")
				if i < 0 {
					t.Errorf("%s: %s: %q is not in the response (or not in that order):\n%s", path, command, line, got)
					break
				}
				rest = rest[i+len(line):]
			}
		}
	}
	return n
}
