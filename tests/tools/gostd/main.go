// Oracle for nfd/lang/gostd: reads JSON requests, one a line, and answers each with what Go's
// strconv, net/netip, net/url and time return for it. Inputs and byte outputs are base64, since
// Go strings are bytes and JSON strings are not.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/netip"
	"net/url"
	"os"
	"sort"
	"strconv"
	"time"
)

type request struct {
	Fn string `json:"fn"`
	A  string `json:"a"` // base64 of the input string
	B  string `json:"b"` // base64 of a second input (time_parse: the value)
	N  int    `json:"n"`
	M  int    `json:"m"`
}

type answer struct {
	Out any    `json:"out"`
	Err string `json:"err,omitempty"`
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func urlFields(u *url.URL) map[string]any {
	user := map[string]any(nil)
	if u.User != nil {
		p, set := u.User.Password()
		user = map[string]any{"name": b64(u.User.Username()), "password": b64(p), "set": set, "string": b64(u.User.String())}
	}
	q := u.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	query := [][]string{}
	for _, k := range keys {
		row := []string{b64(k)}
		for _, v := range q[k] {
			row = append(row, b64(v))
		}
		query = append(query, row)
	}
	return map[string]any{
		"scheme": b64(u.Scheme), "opaque": b64(u.Opaque), "user": user, "host": b64(u.Host),
		"path": b64(u.Path), "raw_path": b64(u.RawPath), "omit_host": u.OmitHost, "force_query": u.ForceQuery,
		"raw_query": b64(u.RawQuery), "fragment": b64(u.Fragment), "raw_fragment": b64(u.RawFragment),
		"string": b64(u.String()), "hostname": b64(u.Hostname()), "port": b64(u.Port()),
		"escaped_path": b64(u.EscapedPath()), "query": query,
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func run(r request) answer {
	raw, err := base64.StdEncoding.DecodeString(r.A)
	if err != nil {
		return answer{Err: "oracle: bad base64"}
	}
	s := string(raw)
	switch r.Fn {
	case "quote":
		return answer{Out: strconv.Quote(s)}
	case "quote_ascii":
		return answer{Out: strconv.QuoteToASCII(s)}
	case "format_float":
		bits, err := strconv.ParseUint(s, 16, 64)
		if err != nil {
			return answer{Err: "oracle: bad float bits"}
		}
		return answer{Out: strconv.FormatFloat(math.Float64frombits(bits), byte(r.N), -1, 64)}
	case "parse_int":
		v, err := strconv.ParseInt(s, r.N, r.M)
		return answer{Out: strconv.FormatInt(v, 10), Err: errText(err)}
	case "parse_uint":
		v, err := strconv.ParseUint(s, r.N, r.M)
		return answer{Out: strconv.FormatUint(v, 10), Err: errText(err)}
	case "atoi":
		v, err := strconv.Atoi(s)
		return answer{Out: strconv.Itoa(v), Err: errText(err)}
	case "parse_float":
		v, err := strconv.ParseFloat(s, 64)
		return answer{Out: strconv.FormatUint(math.Float64bits(v), 16), Err: errText(err)}
	case "parse_addr":
		a, err := netip.ParseAddr(s)
		if err != nil {
			return answer{Err: err.Error()}
		}
		return answer{Out: map[string]any{"string": a.String(), "zone": a.Zone(), "is4": a.Is4(), "is4in6": a.Is4In6()}}
	case "parse_prefix":
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return answer{Err: err.Error()}
		}
		return answer{Out: p.String()}
	case "url_parse", "url_parse_request":
		parse := url.Parse
		if r.Fn == "url_parse_request" {
			parse = url.ParseRequestURI
		}
		u, err := parse(s)
		if err != nil {
			return answer{Err: err.Error()}
		}
		return answer{Out: urlFields(u)}
	case "parse_duration":
		d, err := time.ParseDuration(s)
		return answer{Out: strconv.FormatInt(int64(d), 10), Err: errText(err)}
	case "time_parse":
		value, err := base64.StdEncoding.DecodeString(r.B)
		if err != nil {
			return answer{Err: "oracle: bad base64"}
		}
		t, err := time.Parse(s, string(value))
		if err != nil {
			return answer{Err: err.Error()}
		}
		return answer{Out: t.Format(time.RFC3339Nano + " MST")}
	case "time_format":
		return answer{Out: b64(time.Unix(int64(r.N), int64(r.M)).UTC().Format(s))}
	case "format_duration":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return answer{Err: "oracle: bad duration"}
		}
		return answer{Out: time.Duration(n).String()}
	}
	return answer{Err: "oracle: unknown fn " + r.Fn}
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		var r request
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			enc.Encode(answer{Err: "oracle: bad request"})
			continue
		}
		enc.Encode(run(r))
	}
}
