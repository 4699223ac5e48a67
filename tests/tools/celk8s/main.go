// Command celk8s evaluates CEL expressions in Kubernetes' own CEL environment, as ground truth
// for nfd's Kubernetes CEL library (tests/unit/lang/cel/test_k8s_library.py).
//
// The environment is k8s.io/apiserver's base environment for Kubernetes 1.35 (Lists, Regex,
// URLs, Quantity, IP, CIDR, Format, SemverLib, ext.Strings v2, ext.Sets, ext.Lists v3,
// optional types, ...) plus ext.Bindings as DRA device selectors add it.
//
// stdin: a JSON array of {"expr": source, "vars": {name: JSON value}}. nfd's rule variables
// (flags, attributes, instances, node) are declared with nfd's types, any other name as dyn.
// JSON integers bind as int, other numbers as double.
// stdout: a JSON array, one entry per case: {"value": tagged} or {"error": text, "phase":
// "compile"|"eval"}. A tagged value is {"<cel type>": payload}, see tag.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"

	"k8s.io/apimachinery/pkg/util/version"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// nfdVariables are the types nfd declares for a rule's variables (nfd/lang/cel/compiler.py).
var nfdVariables = map[string]*cel.Type{
	"flags":      cel.MapType(cel.StringType, cel.ListType(cel.StringType)),
	"attributes": cel.MapType(cel.StringType, cel.MapType(cel.StringType, cel.StringType)),
	"instances":  cel.MapType(cel.StringType, cel.ListType(cel.MapType(cel.StringType, cel.StringType))),
	"node":       cel.MapType(cel.StringType, cel.StringType),
}

type testCase struct {
	Expr string                     `json:"expr"`
	Vars map[string]json.RawMessage `json:"vars"`
}

type result struct {
	Value any    `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
	Phase string `json:"phase,omitempty"`
}

func main() {
	var cases []testCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintln(os.Stderr, "celk8s: bad input:", err)
		os.Exit(2)
	}
	base := environment.MustBaseEnvSet(version.MajorMinor(1, 35))
	envset, err := base.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 31),
		EnvOptions:        []cel.EnvOption{ext.Bindings(ext.BindingsVersion(0))},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "celk8s:", err)
		os.Exit(2)
	}
	out := make([]result, 0, len(cases))
	for _, c := range cases {
		out = append(out, run(envset.NewExpressionsEnv(), c))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "celk8s:", err)
		os.Exit(2)
	}
}

func run(env *cel.Env, c testCase) (res result) {
	defer func() {
		if r := recover(); r != nil {
			res = result{Error: fmt.Sprint("panic: ", r), Phase: "eval"}
		}
	}()
	names := make([]string, 0, len(c.Vars))
	for n := range c.Vars {
		names = append(names, n)
	}
	sort.Strings(names)
	act := map[string]any{}
	for _, n := range names {
		var err error
		t, ok := nfdVariables[n]
		if !ok {
			t = cel.DynType
		}
		env, err = env.Extend(cel.Variable(n, t))
		if err != nil {
			return result{Error: err.Error(), Phase: "compile"}
		}
		dec := json.NewDecoder(bytes.NewReader(c.Vars[n]))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return result{Error: "bad variable " + n + ": " + err.Error(), Phase: "compile"}
		}
		act[n] = native(v)
	}
	ast, iss := env.Compile(c.Expr)
	if iss.Err() != nil {
		return result{Error: iss.Err().Error(), Phase: "compile"}
	}
	prg, err := env.Program(ast)
	if err != nil {
		return result{Error: err.Error(), Phase: "compile"}
	}
	val, _, err := prg.Eval(act)
	if err != nil {
		return result{Error: err.Error(), Phase: "eval"}
	}
	return result{Value: tag(val)}
}

// native turns decoded JSON into the Go values cel-go binds: int64 for integers, float64 otherwise.
func native(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case []any:
		for i := range x {
			x[i] = native(x[i])
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = native(x[k])
		}
		return x
	}
	return v
}

// tag encodes a CEL value as {"<type>": payload}: numbers as decimal strings (doubles also
// "NaN", "+Inf", "-Inf"), lists as arrays, maps as [[key, value], ...] sorted by the keys' JSON,
// optionals as {"optional": null | value}, Kubernetes' object types by their string form.
func tag(v ref.Val) any {
	switch x := v.(type) {
	case types.Bool:
		return map[string]any{"bool": bool(x)}
	case types.Int:
		return map[string]any{"int": strconv.FormatInt(int64(x), 10)}
	case types.Uint:
		return map[string]any{"uint": strconv.FormatUint(uint64(x), 10)}
	case types.Double:
		f := float64(x)
		switch {
		case math.IsNaN(f):
			return map[string]any{"double": "NaN"}
		case math.IsInf(f, 1):
			return map[string]any{"double": "+Inf"}
		case math.IsInf(f, -1):
			return map[string]any{"double": "-Inf"}
		}
		return map[string]any{"double": strconv.FormatFloat(f, 'g', -1, 64)}
	case types.String:
		return map[string]any{"string": string(x)}
	case types.Bytes:
		return map[string]any{"bytes": base64.StdEncoding.EncodeToString([]byte(x))}
	case types.Null:
		return map[string]any{"null": nil}
	case types.Duration:
		return map[string]any{"duration": x.Duration.String()}
	case types.Timestamp:
		return map[string]any{"timestamp": x.Time.UTC().Format("2006-01-02T15:04:05.999999999Z07:00")}
	case *types.Optional:
		if !x.HasValue() {
			return map[string]any{"optional": nil}
		}
		return map[string]any{"optional": tag(x.GetValue())}
	case ref.Type:
		return map[string]any{"type": x.TypeName()}
	case apiservercel.Semver:
		return map[string]any{"semver": x.Version.String()}
	case apiservercel.IP:
		return map[string]any{"ip": x.Addr.String()}
	case apiservercel.CIDR:
		return map[string]any{"cidr": x.Prefix.String()}
	case apiservercel.URL:
		return map[string]any{"url": x.URL.String()}
	case apiservercel.Quantity:
		return map[string]any{"quantity": x.Quantity.String()}
	}
	if l, ok := v.(traits.Lister); ok {
		items := []any{}
		it := l.Iterator()
		for it.HasNext() == types.True {
			items = append(items, tag(it.Next()))
		}
		return map[string]any{"list": items}
	}
	if m, ok := v.(traits.Mapper); ok {
		type kv struct {
			k   string
			tag []any
		}
		var entries []kv
		it := m.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			kt := tag(k)
			kj, _ := json.Marshal(kt)
			entries = append(entries, kv{string(kj), []any{kt, tag(m.Get(k))}})
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].k < entries[j].k })
		pairs := []any{}
		for _, e := range entries {
			pairs = append(pairs, e.tag)
		}
		return map[string]any{"map": pairs}
	}
	return map[string]any{"other": fmt.Sprintf("%s:%v", v.Type().TypeName(), v.Value())}
}
