// Command decisions counts the lifecycle's decision points, file by file:
// the measure issue #45 asks to bring down. A decision point is an if (an
// else if too) or a switch or select case other than default, in the
// non-test Go files of the packages named; an if that only passes an
// error on (its condition tests err, its body is one return) is not one.
//
//	go run ./internal/devtools/decisions [-v] [packages...]
//
// With no packages it counts intake, kv, ledger, settlequeue and app; -v
// lists each function with its count.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

var verbose = flag.Bool("v", false, "list each function with its count")

func main() {
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"intake", "kv", "ledger", "settlequeue", "app"}
	}
	total, funcs := 0, 0
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		sort.Strings(files)
		pkg := 0
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			byFunc := count(name)
			n := 0
			for _, fc := range byFunc {
				n += fc.points
			}
			if n > 0 {
				fmt.Printf("%5d  %s (%d functions)\n", n, name, len(byFunc))
			}
			if *verbose {
				for _, fc := range byFunc {
					fmt.Printf("         %3d  %s\n", fc.points, fc.name)
				}
			}
			pkg, funcs = pkg+n, funcs+len(byFunc)
		}
		fmt.Printf("%5d  %s\n", pkg, dir+"/")
		total += pkg
	}
	fmt.Printf("%5d  decision points in %d functions\n", total, funcs)
}

// funcCount is a function's decision points.
type funcCount struct {
	name   string
	points int
}

// count returns the decision points of each function in the file name
// that has any.
func count(name string) []funcCount {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, nil, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var counts []funcCount
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		n := 0
		ast.Inspect(fn.Body, func(node ast.Node) bool {
			switch s := node.(type) {
			case *ast.IfStmt:
				if !passesErrorOn(s) {
					n++
				}
			case *ast.CaseClause:
				if s.List != nil {
					n++
				}
			case *ast.CommClause:
				if s.Comm != nil {
					n++
				}
			}
			return true
		})
		if n > 0 {
			counts = append(counts, funcCount{fn.Name.Name, n})
		}
	}
	return counts
}

// passesErrorOn reports whether s is `if ... err ... { return ... }` with
// no else: an error passed on, which decides nothing.
func passesErrorOn(s *ast.IfStmt) bool {
	if s.Else != nil || len(s.Body.List) != 1 {
		return false
	}
	if _, ok := s.Body.List[0].(*ast.ReturnStmt); !ok {
		return false
	}
	mentionsErr := false
	ast.Inspect(s.Cond, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && (id.Name == "err" || strings.HasSuffix(id.Name, "err") || strings.HasSuffix(id.Name, "Err")) {
			mentionsErr = true
		}
		return true
	})
	return mentionsErr
}
