package main

// "oracle extract FILE..." prints the test tables of Go source files as JSON lines, so that
// golden cases can be taken from $GOROOT/src/text/template at generation time without
// copying Go's test files: one line per element of every top-level `var X = []T{...}`
// ({"file", "table", "fields": [{"s": constant string} | {"src": expression source}]}) and
// one per string constant ({"file", "const", "s"}).

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
)

type field struct {
	S   *string `json:"s,omitempty"`
	Src string  `json:"src,omitempty"`
}

func extract(files []string) error {
	enc := json.NewEncoder(os.Stdout)
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		consts := map[string]string{}
		text := func(e ast.Expr) string {
			return string(src[fset.Position(e.Pos()).Offset:fset.Position(e.End()).Offset])
		}
		var str func(e ast.Expr) (string, bool)
		str = func(e ast.Expr) (string, bool) {
			switch x := e.(type) {
			case *ast.BasicLit:
				if x.Kind == token.STRING {
					s, err := strconv.Unquote(x.Value)
					return s, err == nil
				}
			case *ast.Ident:
				s, ok := consts[x.Name]
				return s, ok
			case *ast.ParenExpr:
				return str(x.X)
			case *ast.BinaryExpr:
				if x.Op == token.ADD {
					a, ok1 := str(x.X)
					b, ok2 := str(x.Y)
					return a + b, ok1 && ok2
				}
			}
			return "", false
		}
		name := filepath.Base(path)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, v := range vs.Values {
					if i >= len(vs.Names) {
						break
					}
					id := vs.Names[i].Name
					if gd.Tok == token.CONST {
						if s, ok := str(v); ok {
							consts[id] = s
							enc.Encode(map[string]string{"file": name, "const": id, "s": s})
						}
						continue
					}
					cl, ok := v.(*ast.CompositeLit)
					if !ok {
						continue
					}
					if _, ok := cl.Type.(*ast.ArrayType); !ok {
						continue
					}
					for _, elt := range cl.Elts {
						var fields []field
						if ecl, ok := elt.(*ast.CompositeLit); ok {
							for _, fe := range ecl.Elts {
								if s, ok := str(fe); ok {
									fields = append(fields, field{S: &s})
								} else {
									fields = append(fields, field{Src: text(fe)})
								}
							}
						} else if s, ok := str(elt); ok {
							fields = append(fields, field{S: &s})
						} else {
							fields = append(fields, field{Src: text(elt)})
						}
						enc.Encode(map[string]any{"file": name, "table": id, "fields": fields})
					}
				}
			}
		}
	}
	return nil
}
