// Command goregex records what Go's regexp package answers, as ground truth for nfd's Go
// regexp dialect on RE2 (tests/unit/lang/goregex/test_goregex_conformance.py).
//
// It reads the pattern/input tables Go's own tests use ($GOROOT/src/regexp/testdata and every
// string literal of regexp/syntax/parse_test.go) plus extra cases from stdin (JSON lines
// {"p": pattern, "in": [inputs]}), and writes one JSON line per pattern:
// {"src", "p", "err" (regexp.Compile's error or ""), "in" (omitted: the previous record's), "m" (MatchString per input, "0"/"1"),
// "idx" (FindStringSubmatchIndex per input, omitted for the exhaustive table) and, with idx,
// "all", "rep", "split", "split2" (see result)}.
// Patterns or inputs that are not valid UTF-8 are skipped: nfd only ever sees Unicode text.
// "goregex bench" times MatchString instead (see bench).
package main

import (
	"bufio"
	"compress/bzip2"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

type result struct {
	Src string    `json:"src"`
	P   string    `json:"p"`
	Err string    `json:"err"`
	In  *[]string `json:"in,omitempty"`
	M   string    `json:"m"`
	Idx [][]int   `json:"idx,omitempty"`
	// With Idx, per input: FindAllStringSubmatchIndex(s, -1), ReplaceAllString(s, ReplTemplate),
	// Split(s, -1) and Split(s, 2).
	All    [][][]int  `json:"all,omitempty"`
	Rep    []string   `json:"rep,omitempty"`
	Split  [][]string `json:"split,omitempty"`
	Split2 [][]string `json:"split2,omitempty"`
}

// ReplTemplate exercises Expand: whole match, numbered and braced groups, a name that is not
// a number, a literal dollar.
const ReplTemplate = "<$0|${1}|$2x|${n}|$$>"

var out = bufio.NewWriterSize(os.Stdout, 1<<20)

// lastIn is the previous record's inputs: a record without "in" has the same ones.
var lastIn string

func emit(src, pattern string, inputs []string, withIdx bool) {
	if !utf8.ValidString(pattern) {
		return
	}
	var in []string
	for _, s := range inputs {
		if utf8.ValidString(s) {
			in = append(in, s)
		}
	}
	r := result{Src: src, P: pattern}
	if key := strings.Join(in, "\x00") + "\x01"; key != lastIn {
		if in == nil {
			in = []string{}
		}
		r.In, lastIn = &in, key
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		r.Err = err.Error()
	} else {
		var m strings.Builder
		for _, s := range in {
			if re.MatchString(s) {
				m.WriteByte('1')
			} else {
				m.WriteByte('0')
			}
			if withIdx {
				r.Idx = append(r.Idx, re.FindStringSubmatchIndex(s))
				r.All = append(r.All, re.FindAllStringSubmatchIndex(s, -1))
				r.Rep = append(r.Rep, re.ReplaceAllString(s, ReplTemplate))
				r.Split = append(r.Split, re.Split(s, -1))
				r.Split2 = append(r.Split2, re.Split(s, 2))
			}
		}
		r.M = m.String()
	}
	b, _ := json.Marshal(r)
	out.Write(b)
	out.WriteByte('\n')
}

// re2Table reads the re2-search / re2-exhaustive format: "strings" then quoted inputs,
// "regexps" then quoted patterns each followed by result lines.
func re2Table(name string, r io.Reader, withIdx bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var inputs []string
	mode := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || line[0] == '#':
		case line == "strings":
			inputs, mode = nil, "strings"
		case line == "regexps":
			mode = "regexps"
		case line[0] == '"':
			s, err := strconv.Unquote(line)
			if err != nil {
				continue
			}
			if mode == "strings" {
				inputs = append(inputs, s)
			} else if mode == "regexps" {
				emit(name, s, inputs, withIdx)
			}
		}
	}
}

// fowler reads the AT&T .dat format: tab-separated flags, pattern, input, result.
func fowler(name string, r io.Reader) {
	sc := bufio.NewScanner(r)
	prev := ""
	for sc.Scan() {
		f := strings.FieldsFunc(sc.Text(), func(c rune) bool { return c == '\t' })
		if len(f) < 3 || f[0] == "" || f[0][0] == '#' || f[0] == "NOTE" {
			continue
		}
		p, s := f[1], f[2]
		if p == "SAME" {
			p = prev
		}
		prev = p
		if s == "NULL" {
			s = ""
		}
		emit(name, p, []string{s, "", "a", "ab\n", "xyz"}, true)
	}
}

var probes = []string{"", "a", "abc", "A", "aB\nc", "x y_z", "ΣΑΣ", "σς", "\u212a", "k", "αβγ", "日本", "a{,2}", "{", "\x00"}

func parseTable(path string) {
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, path, nil, 0)
	if err != nil {
		return
	}
	seen := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && !seen[s] {
				seen[s] = true
				emit("parse_test.go", s, probes, true)
			}
		}
		return true
	})
}

// bench times MatchString for JSON lines {"p", "s", "n"} from stdin: one JSON line each,
// {"p", "ns"} (nanoseconds per call, the best of three rounds of n calls), for
// benchmarks/bench_regex.py.
func bench() {
	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	for {
		var c struct {
			P string `json:"p"`
			S string `json:"s"`
			N int    `json:"n"`
		}
		if err := dec.Decode(&c); err != nil {
			break
		}
		re := regexp.MustCompile(c.P)
		best := time.Duration(1 << 62)
		for round := 0; round < 3; round++ {
			t0 := time.Now()
			for i := 0; i < c.N; i++ {
				re.MatchString(c.S)
			}
			best = min(best, time.Since(t0))
		}
		b, _ := json.Marshal(map[string]any{"p": c.P, "ns": float64(best.Nanoseconds()) / float64(max(c.N, 1))})
		out.Write(b)
		out.WriteByte('\n')
	}
	out.Flush()
}

// compileBench times regexp.Compile for JSON lines {"pattern", "rounds"} from stdin: one JSON
// line each, {"pattern", "ns"} (nanoseconds per compile, the best of three rounds), for
// benchmarks/bench_validate.py.
func compileBench() {
	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	for {
		var c struct {
			P string `json:"pattern"`
			N int    `json:"rounds"`
		}
		if err := dec.Decode(&c); err != nil {
			break
		}
		best := time.Duration(1 << 62)
		for round := 0; round < 3; round++ {
			t0 := time.Now()
			for i := 0; i < c.N; i++ {
				regexp.MustCompile(c.P)
			}
			best = min(best, time.Since(t0))
		}
		b, _ := json.Marshal(map[string]any{"pattern": c.P, "ns": float64(best.Nanoseconds()) / float64(max(c.N, 1))})
		out.Write(b)
		out.WriteByte('\n')
	}
	out.Flush()
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "bench" {
		bench()
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "compile" {
		compileBench()
		return
	}
	dir := filepath.Join(runtime.GOROOT(), "src", "regexp")
	if len(os.Args) > 1 && os.Args[1] == "corpus" {
		td := filepath.Join(dir, "testdata")
		if fh, err := os.Open(filepath.Join(td, "re2-search.txt")); err == nil {
			re2Table("re2-search.txt", fh, true)
			fh.Close()
		}
		if fh, err := os.Open(filepath.Join(td, "re2-exhaustive.txt.bz2")); err == nil {
			re2Table("re2-exhaustive.txt", bzip2.NewReader(fh), false)
			fh.Close()
		}
		for _, n := range []string{"basic.dat", "nullsubexpr.dat", "repetition.dat"} {
			if fh, err := os.Open(filepath.Join(td, n)); err == nil {
				fowler(n, fh)
				fh.Close()
			}
		}
		parseTable(filepath.Join(dir, "syntax", "parse_test.go"))
	}
	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	for {
		var c struct {
			P  string   `json:"p"`
			In []string `json:"in"`
		}
		if err := dec.Decode(&c); err != nil {
			break
		}
		emit("extra", c.P, c.In, true)
	}
	out.Flush()
}
