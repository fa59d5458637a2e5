package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/architecture.md names files, packages, types and functions; each
// must exist, so that the page cannot describe code that has gone, and each
// file of relay/ and internal/wire/ must have its line.
func TestArchitectureNamesWhatExists(t *testing.T) {
	doc := readDoc(t, "docs/architecture.md")
	decl := declaredNames(t)
	files := trackedGoFiles(t)

	// Every code span is read: a file or directory, a qualified name
	// (pkg.Name, Type.Member, pkg.Type.Member), or a bare exported name.
	// Names of other modules are qualified by their package (fasthttp.
	// RequestCtx, syscall.RawConn), which is not checked.
	span := regexp.MustCompile("`([^`\n]+)`")
	fileRE := regexp.MustCompile(`^[A-Za-z0-9_./-]+\.go$`)
	dirRE := regexp.MustCompile(`^[a-z0-9_./-]+/$`)
	nameRE := regexp.MustCompile(`^\(?\*?([A-Za-z_][A-Za-z0-9_]*(?:\)?\.[A-Za-z_][A-Za-z0-9_]*)*)(?:\(\))?$`)
	checked := 0
	for _, m := range span.FindAllStringSubmatch(doc, -1) {
		s := m[1]
		switch {
		case fileRE.MatchString(s):
			checked++
			if !files.has(s) {
				t.Errorf("docs/architecture.md names %s: no such file", s)
			}
		case dirRE.MatchString(s):
			checked++
			if fi, err := os.Stat(strings.TrimSuffix(s, "/")); err != nil || !fi.IsDir() {
				t.Errorf("docs/architecture.md names %s: no such directory", s)
			}
		case nameRE.MatchString(s):
			name := strings.ReplaceAll(nameRE.FindStringSubmatch(s)[1], ")", "")
			parts := strings.Split(name, ".")
			if len(parts) == 1 && (!ast.IsExported(name) || strings.ToUpper(name) == name) {
				continue // a word in code (serve, run), an event type (RUN_STARTED): no Go declaration
			}
			if _, err := os.Stat(name); err == nil {
				continue // a file of the repository (Dockerfile)
			}
			if len(parts) > 1 && !decl.qualifier[parts[0]] {
				continue // a.b where a is no package or type of the module (ctx.Done, os.Exit)
			}
			checked++
			if !decl.names[name] {
				t.Errorf("docs/architecture.md names `%s`: nothing of that name is declared in the module", s)
			}
		}
	}
	// And the other way: every file of relay/ and internal/wire/ has its line.
	for _, dir := range []string{"relay", "internal/wire"} {
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range names {
			if base := filepath.Base(f); !strings.HasSuffix(base, "_test.go") && !strings.Contains(doc, "`"+base+"`") {
				t.Errorf("docs/architecture.md has no line for %s", f)
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d names checked: the page's code spans are not being read", checked)
	}
}

// goDecls is what the module declares, by every name a doc may use for it.
type goDecls struct {
	names     map[string]bool // Name, pkg.Name, Type.Member, pkg.Type.Member
	qualifier map[string]bool // package names and type names
}

// declaredNames parses every Go file of the module (tests included: a doc
// may name a test's helper) and records its top-level declarations, the
// methods and fields of its types.
func declaredNames(t *testing.T) goDecls {
	t.Helper()
	d := goDecls{names: map[string]bool{}, qualifier: map[string]bool{}}
	add := func(pkg string, parts ...string) {
		n := strings.Join(parts, ".")
		d.names[n] = true
		d.names[pkg+"."+n] = true
		d.names[parts[len(parts)-1]] = true // a member named bare, in a sentence about its type
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); path != "." && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		d.qualifier[pkg] = true
		for _, dl := range f.Decls {
			switch dl := dl.(type) {
			case *ast.FuncDecl:
				if dl.Recv == nil || len(dl.Recv.List) == 0 {
					add(pkg, dl.Name.Name)
					continue
				}
				add(pkg, recvType(dl.Recv.List[0].Type), dl.Name.Name)
			case *ast.GenDecl:
				for _, sp := range dl.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						add(pkg, sp.Name.Name)
						d.qualifier[sp.Name.Name] = true
						addMembers(sp, func(m string) { add(pkg, sp.Name.Name, m) })
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							add(pkg, n.Name)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// recvType is the name of a method's receiver type: T for T, *T, T[P].
func recvType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// addMembers gives the fields of a struct type and the methods of an
// interface type.
func addMembers(sp *ast.TypeSpec, add func(string)) {
	var fields *ast.FieldList
	switch t := sp.Type.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	}
	if fields == nil {
		return
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			add(n.Name)
		}
		if len(f.Names) == 0 { // embedded: its name is its type's
			if n := recvType(f.Type); n != "" {
				add(n)
			} else if sel, ok := f.Type.(*ast.SelectorExpr); ok {
				add(sel.Sel.Name)
			}
		}
	}
}

// goFiles is the module's Go files, by path from the root.
type goFiles []string

// has reports whether a file of that path exists, or, for a path that is
// only a file's name or the end of its path, a file that ends so.
func (fs goFiles) has(p string) bool {
	for _, f := range fs {
		if f == p || strings.HasSuffix(f, "/"+p) {
			return true
		}
	}
	return false
}

func trackedGoFiles(t *testing.T) goFiles {
	t.Helper()
	var out goFiles
	err := filepath.WalkDir(".", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); path != "." && (strings.HasPrefix(n, ".") || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			out = append(out, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
