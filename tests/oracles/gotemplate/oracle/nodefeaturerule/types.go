// Package nodefeaturerule mirrors the Go types upstream NFD passes to templates
// (pkg/apis/nfd/nodefeaturerule), so %T, typeOf, index and Sprig's type checks see the same.
package nodefeaturerule

type MatchedElement map[string]string

type domainMatchedFeatures map[string][]MatchedElement

type matchedFeatures map[string]domainMatchedFeatures

// FromJSON builds matchedFeatures from {"domain": {"feature": [{"k": "v"}...]}}; an empty
// list is a nil slice, as for a term that matched nothing.
func FromJSON(v interface{}) interface{} {
	out := matchedFeatures{}
	doms, _ := v.(map[string]interface{})
	for dom, feats := range doms {
		d := domainMatchedFeatures{}
		fm, _ := feats.(map[string]interface{})
		for name, elems := range fm {
			var list []MatchedElement
			l, _ := elems.([]interface{})
			for _, e := range l {
				me := MatchedElement{}
				em, _ := e.(map[string]interface{})
				for k, val := range em {
					me[k], _ = val.(string)
				}
				list = append(list, me)
			}
			d[name] = list
		}
		out[dom] = d
	}
	return out
}
