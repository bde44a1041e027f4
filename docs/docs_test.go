// Package docs_test keeps the docs true: every setting the Worker reads has
// a row in deploy.md's table, metrics.md's tables are the data points'
// columns and outcomes, architecture.md's lifecycle table is intake's,
// every Go name the docs quote exists, and every relative link leads to a
// file.
package docs_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/metrics"
)

// root is the module's root, relative to this package's directory, where
// go test runs.
const root = ".."

// settingsDoc is the doc whose table must name every setting.
const settingsDoc = "docs/deploy.md"

// settingSources are the files whose exported string constants with a
// given suffix name what the Worker reads: config's vars and secrets, and
// app's bindings.
var settingSources = []struct{ file, suffix string }{
	{"config/config.go", "Var"},
	{"app/app.go", "Binding"},
}

// TestSettingsTableNamesEverySetting fails for a setting the Worker reads
// that has no row in deploy.md's table, and for a row that names none.
func TestSettingsTableNamesEverySetting(t *testing.T) {
	settings := map[string]string{} // the setting → the constant that names it
	for _, src := range settingSources {
		for name, value := range stringConsts(t, src.file, src.suffix) {
			settings[value] = filepath.Base(filepath.Dir(src.file)) + "." + name
		}
	}
	if len(settings) == 0 {
		t.Fatal("found no settings: the constants moved?")
	}
	rows := tableRows(t, settingsDoc)
	for _, value := range slices.Sorted(maps.Keys(settings)) {
		if _, ok := rows[value]; !ok {
			t.Errorf("%s: setting %s (%s) has no row in the settings table", settingsDoc, value, settings[value])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(rows)) {
		if _, ok := settings[name]; !ok {
			t.Errorf("%s:%d: the settings table's row %s names no setting the Worker reads", settingsDoc, rows[name], name)
		}
	}
}

// metricsDoc is the doc whose tables must be the data points' columns and
// outcomes.
const metricsDoc = "docs/metrics.md"

// columnName matches a column as the SQL API names it.
var columnName = regexp.MustCompile(`^(index|blob|double)[0-9]+$`)

// schemaRow matches a row of metrics.md's schema table: the column and
// its field, both backticked.
var schemaRow = regexp.MustCompile("^\\| `([a-z]+[0-9]+)` \\| `([a-z_]+)` \\|")

// TestMetricsTablesAreTheSchema fails unless metrics.md's schema table
// lists metrics.Columns, in their order and with their fields, and its
// outcome table has a row for each metrics.Outcome and none more.
func TestMetricsTablesAreTheSchema(t *testing.T) {
	var got []metrics.Column
	for _, line := range lines(t, metricsDoc) {
		if m := schemaRow.FindStringSubmatch(line); m != nil && columnName.MatchString(m[1]) {
			got = append(got, metrics.Column{Name: m[1], Field: m[2]})
		}
	}
	if want := metrics.Columns(); !slices.Equal(got, want) {
		t.Errorf("%s's schema table lists %v, want metrics.Columns() %v", metricsDoc, got, want)
	}
	outcomes := typedConsts(t, "metrics/metrics.go", "Outcome")
	if len(outcomes) == 0 {
		t.Fatal("found no metrics.Outcome constants: they moved?")
	}
	rows := tableRows(t, metricsDoc)
	for _, value := range slices.Sorted(maps.Keys(outcomes)) {
		if _, ok := rows[value]; !ok {
			t.Errorf("%s: outcome %s (metrics.%s) has no row in the outcome table", metricsDoc, value, outcomes[value])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(rows)) {
		if _, ok := outcomes[name]; !ok && !columnName.MatchString(name) {
			t.Errorf("%s:%d: the row %s names no outcome and no column", metricsDoc, rows[name], name)
		}
	}
}

// typedConsts returns the values of file's string constants declared with
// type typ, each with its constant's name.
func typedConsts(t *testing.T, file, typ string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, file), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typ {
				continue
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				value, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				consts[value] = name.Name
			}
		}
	}
	return consts
}

// stringConsts returns the exported constants of file whose names end in
// suffix and whose values are string literals, by name.
func stringConsts(t *testing.T, file, suffix string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, file), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !name.IsExported() || !strings.HasSuffix(name.Name, suffix) || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				if consts[name.Name], err = strconv.Unquote(lit.Value); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return consts
}

// rowName matches a table row that starts with a backticked name.
var rowName = regexp.MustCompile("^\\| `([^`]+)`")

// tableRows returns the names that start table rows in doc, with their
// line numbers.
func tableRows(t *testing.T, doc string) map[string]int {
	t.Helper()
	rows := map[string]int{}
	for n, line := range lines(t, doc) {
		if m := rowName.FindStringSubmatch(line); m != nil {
			rows[m[1]] = n + 1
		}
	}
	return rows
}

// quoted matches a backticked Go name: pkg.Name or pkg.Name.Member,
// optionally called, as in `kv.NewStore()`.
var quoted = regexp.MustCompile("`([a-z][a-z0-9]*)\\.([A-Za-z_][A-Za-z0-9_]*)(?:\\.([A-Za-z_][A-Za-z0-9_]*))?(?:\\(\\))?`")

// fileExtensions end quoted file names, such as `oms.go`, which look like
// pkg.Name.
var fileExtensions = []string{"go", "mjs", "js", "ts", "md", "yaml", "toml", "json", "sh", "wasm"}

// TestQuotedGoNamesExist fails for a backticked pkg.Name or
// pkg.Type.Member in the docs that names nothing in this module's package
// pkg. Every .go file of the package counts, whatever its build tags, but
// not its tests.
func TestQuotedGoNamesExist(t *testing.T) {
	docs := markdownDocs(t)
	packages := modulePackages(t)
	checked := 0
	for _, doc := range docs {
		for n, line := range lines(t, doc) {
			for _, m := range quoted.FindAllStringSubmatch(line, -1) {
				pkg, name, member := m[1], m[2], m[3]
				if slices.Contains(fileExtensions, name) || slices.Contains(fileExtensions, member) {
					continue
				}
				names, ok := packages[pkg]
				if !ok {
					continue // not one of ours: js.FuncOf, env.ORDERS, …
				}
				checked++
				want := name
				if member != "" {
					want = name + "." + member
				}
				if !names[want] {
					t.Errorf("%s:%d: %s names nothing in package %s", doc, n+1, m[0], pkg)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("the docs quote no Go name of this module: the pattern broke?")
	}
	t.Logf("checked %d quoted Go names in %d docs", checked, len(docs))
}

// link matches a markdown link's target.
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinksLeadSomewhere fails for a relative link in the docs to a file
// that does not exist.
func TestLinksLeadSomewhere(t *testing.T) {
	for _, doc := range markdownDocs(t) {
		for n, line := range lines(t, doc) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target, _, _ := strings.Cut(m[1], "#")
				if target == "" || strings.Contains(target, "://") {
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.Dir(doc), target)); err != nil {
					t.Errorf("%s:%d: the link to %s leads nowhere", doc, n+1, m[1])
				}
			}
		}
	}
}

// markdownDocs are the docs the checks read, as paths from the module's
// root: the README, bench/README.md and docs/*.md.
func markdownDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		docs[i], _ = filepath.Rel(root, d)
	}
	return append([]string{"README.md", "bench/README.md"}, docs...)
}

// modulePackages returns, for each package name of the module that one
// directory alone uses (so not main), the names it declares: top-level
// identifiers as Name, and methods, struct fields and interface methods as
// Type.Member.
func modulePackages(t *testing.T) map[string]map[string]bool {
	t.Helper()
	byName := map[string]map[string]bool{}
	dirs := map[string]string{} // package name → its directory
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if base := d.Name(); path != root && (strings.HasPrefix(base, ".") || base == "node_modules" || base == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg, dir := f.Name.Name, filepath.Dir(path)
		if other, ok := dirs[pkg]; ok && other != dir {
			byName[pkg] = nil // two directories: ambiguous
			return nil
		}
		dirs[pkg] = dir
		if _, ok := byName[pkg]; !ok {
			byName[pkg] = map[string]bool{}
		}
		if names := byName[pkg]; names != nil {
			declare(names, f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg, names := range byName {
		if names == nil {
			delete(byName, pkg)
		}
	}
	return byName
}

// declare adds f's top-level names and its types' members to names.
func declare(names map[string]bool, f *ast.File) {
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv == nil {
				names[decl.Name.Name] = true
				continue
			}
			if recv := receiverType(decl.Recv.List[0].Type); recv != "" {
				names[recv+"."+decl.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.ValueSpec:
					for _, name := range spec.Names {
						names[name.Name] = true
					}
				case *ast.TypeSpec:
					names[spec.Name.Name] = true
					for _, member := range members(spec.Type) {
						names[spec.Name.Name+"."+member] = true
					}
				}
			}
		}
	}
}

// receiverType is the name of a method's receiver type: T for T, *T, T[P]
// and *T[P].
func receiverType(expr ast.Expr) string {
	for {
		switch e := expr.(type) {
		case *ast.StarExpr:
			expr = e.X
		case *ast.IndexExpr:
			expr = e.X
		case *ast.IndexListExpr:
			expr = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}

// members are a struct type's fields or an interface type's methods,
// embedded ones by their type's name.
func members(expr ast.Expr) []string {
	var list *ast.FieldList
	switch e := expr.(type) {
	case *ast.StructType:
		list = e.Fields
	case *ast.InterfaceType:
		list = e.Methods
	default:
		return nil
	}
	var names []string
	for _, field := range list.List {
		for _, name := range field.Names {
			names = append(names, name.Name)
		}
		if len(field.Names) == 0 {
			if t := receiverType(field.Type); t != "" {
				names = append(names, t)
			} else if sel, ok := field.Type.(*ast.SelectorExpr); ok {
				names = append(names, sel.Sel.Name)
			}
		}
	}
	return names
}

// lines returns the lines of file, a path from the module's root.
func lines(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		out = append(out, s.Text())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLifecycleTableIsIntakes fails unless architecture.md holds the
// lifecycle's table (intake.Transitions), row for row.
func TestLifecycleTableIsIntakes(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs/architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	want.WriteString("| from | event | to | by | why |\n|---|---|---|---|---|\n")
	for _, r := range intake.Transitions {
		want.WriteString("| " + r.From.String() + " | " + r.Event.String() + " | " + r.To.String() + " | " + r.By.String() + " | " + r.Why + " |\n")
	}
	if !strings.Contains(string(doc), want.String()) {
		t.Errorf("docs/architecture.md lacks the lifecycle's table as intake.Transitions has it; put this in its place:\n%s", want.String())
	}
}

// TestTheWorkerNeedsNeitherFmtNorEncodingJSON holds architecture.md's
// Dependencies to the build: the packages it says the Worker does
// without must not reach the wasm, where each adds its size.
func TestTheWorkerNeedsNeitherFmtNorEncodingJSON(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, pkg := range []string{"fmt", "encoding/json", "net/http", "crypto/sha256", "github.com/google/uuid"} {
		if slices.Contains(deps, pkg) {
			t.Errorf("the Worker's wasm imports %s, which docs/architecture.md says it does without (go list -deps shows who: -f '{{.ImportPath}}: {{.Imports}}')", pkg)
		}
	}
}
