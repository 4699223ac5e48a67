package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"text/template"
	"unicode"

	"github.com/Masterminds/sprig/v3"

	"nfd.test/gotemplate-oracle/nodefeaturerule"
)

// Reads JSON lines {"tpl":..., "data":..., "nfd": bool} ("nfd": data is NFD's matched features, typed as upstream's); prints JSON lines {"out":..., "err":..., "perr":...}
func main() {
	if len(os.Args) > 1 && os.Args[1] == "extract" {
		if err := extract(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "unicode" {
		caseTable()
		return
	}
	fm := sprig.TxtFuncMap()
	delete(fm, "env")
	delete(fm, "expandenv")
	delete(fm, "getHostByName")
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<24), 1<<24)
	enc := json.NewEncoder(os.Stdout)
	for sc.Scan() {
		var c struct {
			Tpl  string      `json:"tpl"`
			Data interface{} `json:"data"`
			NFD  bool        `json:"nfd"`
		}
		res := map[string]string{}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(&c); err != nil {
			res["perr"] = "badjson: " + err.Error()
			enc.Encode(res)
			continue
		}
		t, err := template.New("").Option("missingkey=error").Funcs(fm).Parse(c.Tpl)
		if err != nil {
			res["perr"] = err.Error()
			enc.Encode(res)
			continue
		}
		c.Data = fix(c.Data)
		if c.NFD {
			c.Data = nodefeaturerule.FromJSON(c.Data)
		}
		var buf bytes.Buffer
		func() {
			defer func() {
				if r := recover(); r != nil {
					res["err"] = fmt.Sprintf("panic: %v", r)
				}
			}()
			if err := t.Execute(&buf, c.Data); err != nil {
				res["err"] = err.Error()
			}
		}()
		res["out"] = buf.String()
		enc.Encode(res)
	}
}

func fix(v interface{}) interface{} {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i)
		}
		f, _ := x.Float64()
		return f
	case []interface{}:
		for i := range x {
			x[i] = fix(x[i])
		}
		return x
	case map[string]interface{}:
		for k := range x {
			x[k] = fix(x[k])
		}
		return x
	}
	return v
}

// caseTable prints Go's simple case mappings: one JSON line [rune, upper, lower, title] for
// every rune that any of them changes (../gen_gocase.py compares them with Python's).
func caseTable() {
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for r := rune(0); r <= unicode.MaxRune; r++ {
		u, l, t := unicode.ToUpper(r), unicode.ToLower(r), unicode.ToTitle(r)
		if u != r || l != r || t != r {
			fmt.Fprintf(w, "[%d,%d,%d,%d]\n", r, u, l, t)
		}
	}
}
