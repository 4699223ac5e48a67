// Test driver (not committed anywhere): upstream sources with a worker-style config.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	kcpuid "github.com/klauspost/cpuid/v2"
	upcpuid "sigs.k8s.io/node-feature-discovery/pkg/cpuid"

	worker "sigs.k8s.io/node-feature-discovery/pkg/nfd-worker"
	"sigs.k8s.io/node-feature-discovery/source"
)

func main() {
	what := flag.String("what", "features", "features|labels")
	cfgPath := flag.String("config", "", "worker config yaml")
	srcs := flag.String("sources", "", "comma list of feature sources (default: all enabled by default)")
	flag.Parse()
	if batch := os.Getenv("NFD_CPUID_BATCH"); batch != "" {
		cpuidBatch(batch)
		return
	}
	if path := os.Getenv("NFD_CPUID_JSON"); path != "" {
		mockCpuid(path)
	}

	confSources := source.GetAllConfigurableSources()
	cfgs := map[string]source.Config{}
	for n, s := range confSources {
		cfgs[n] = s.NewConfig()
	}
	wl := regexp.MustCompile("")
	if *cfgPath != "" {
		data, err := os.ReadFile(*cfgPath)
		if err != nil {
			panic(err)
		}
		var top struct {
			Core    map[string]json.RawMessage `json:"core"`
			Sources map[string]json.RawMessage `json:"sources"`
		}
		if err := yaml.Unmarshal(data, &top); err != nil {
			panic(err)
		}
		for k, raw := range top.Sources {
			if v, ok := cfgs[k]; ok {
				if err := yaml.Unmarshal(raw, &v); err != nil {
					panic(err)
				}
			}
		}
		if raw, ok := top.Core["labelWhiteList"]; ok {
			var s string
			_ = json.Unmarshal(raw, &s)
			wl = regexp.MustCompile(s)
		}
	}
	for n, s := range confSources {
		s.SetConfig(cfgs[n])
	}
	sel := map[string]bool{}
	if *srcs != "" {
		for _, n := range strings.Split(*srcs, ",") {
			sel[n] = true
		}
	}
	for n, s := range source.GetAllFeatureSources() {
		if ts, ok := s.(source.SupplementalSource); ok && ts.DisableByDefault() {
			continue
		}
		if len(sel) > 0 && !sel[n] && *what == "features" {
			continue
		}
		if err := s.Discover(); err != nil {
			fmt.Fprintf(os.Stderr, "discover %s: %v\n", n, err)
		}
	}
	var out interface{}
	if *what == "features" {
		out = source.GetAllFeatures()
	} else {
		ls := []source.LabelSource{}
		for _, s := range source.GetAllLabelSources() {
			if ts, ok := s.(source.SupplementalSource); ok && ts.DisableByDefault() {
				continue
			}
			ls = append(ls, s)
		}
		sort.Slice(ls, func(i, j int) bool {
			if ls[i].Priority() != ls[j].Priority() {
				return ls[i].Priority() < ls[j].Priority()
			}
			return ls[i].Name() < ls[j].Name()
		})
		labels := worker.Labels{}
		for _, s := range ls {
			if len(sel) > 0 && !sel[s.Name()] {
				continue
			}
			l, err := worker.GetFeatureLabels(s, *wl)
			if err != nil {
				fmt.Fprintf(os.Stderr, "labels %s: %v\n", s.Name(), err)
				continue
			}
			for k, v := range l {
				labels[k] = v
			}
		}
		out = labels
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	fmt.Println(string(b))
}

// cpuidBatch: a JSON array of cpuid.json objects in, the cpu source's cpuid flags/attributes and
// model for each out (one JSON array).
func cpuidBatch(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		panic(err)
	}
	cpu := source.GetFeatureSource("cpu")
	out := []map[string]interface{}{}
	tmp := path + ".one"
	for _, it := range items {
		if err := os.WriteFile(tmp, it, 0o644); err != nil {
			panic(err)
		}
		mockCpuid(tmp)
		_ = cpu.Discover()
		f := cpu.GetFeatures()
		out = append(out, map[string]interface{}{
			"flags":    f.Flags["cpuid"].Elements,
			"attrs":    f.Attributes["cpuid"].Elements,
			"model":    f.Attributes["model"].Elements,
			"rdt":      f.Attributes["rdt"].Elements,
			"security": f.Attributes["security"].Elements,
			"sst":      f.Attributes["sst"].Elements,
		})
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}

// mockCpuid feeds a cpuid.json fixture ({"leaves": {"0x7:0": [a,b,c,d]}, "xgetbv": n}) to
// klauspost/cpuid: (leaf, subleaf), else (leaf, any), else zeros.
func mockCpuid(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	var fx struct {
		Leaves map[string][4]uint32 `json:"leaves"`
		Xgetbv uint64               `json:"xgetbv"`
	}
	if err := json.Unmarshal(data, &fx); err != nil {
		panic(err)
	}
	type key struct {
		leaf, sub uint64
		any       bool
	}
	leaves := map[key][4]uint32{}
	for k, v := range fx.Leaves {
		parts := strings.SplitN(k, ":", 2)
		l, err := strconv.ParseUint(parts[0], 0, 32)
		if err != nil {
			panic(err)
		}
		if len(parts) == 1 || parts[1] == "" {
			leaves[key{l, 0, false}] = v
			continue
		}
		if parts[1] == "-1" {
			leaves[key{l, 0, true}] = v
			continue
		}
		sb, err := strconv.ParseUint(parts[1], 0, 32)
		if err != nil {
			panic(err)
		}
		leaves[key{l, sb, false}] = v
	}
	id := func(op, op2 uint32) (a, b, c, d uint32) {
		if v, ok := leaves[key{uint64(op), uint64(op2), false}]; ok {
			return v[0], v[1], v[2], v[3]
		}
		if v, ok := leaves[key{uint64(op), 0, true}]; ok {
			return v[0], v[1], v[2], v[3]
		}
		return 0, 0, 0, 0
	}
	upcpuid.Hook = id
	kcpuid.MockForParity(id, fx.Xgetbv)
}
