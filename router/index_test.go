package router

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// miniDocs loads the small catalog under testdata.
func miniDocs(t testing.TB) []Doc {
	t.Helper()
	docs, err := LoadCatalog(filepath.Join("testdata", "mini", "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

var allModes = []Mode{Fused, Flat, Hierarchical}

func names(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Name
	}
	return out
}

func TestRouteFindsTool(t *testing.T) {
	ix := Build(miniDocs(t))
	tests := []struct {
		query, want string
	}{
		{"what is the weather forecast for Berlin", "get_forecast"},
		{"current temperature and humidity", "get_current_conditions"},
		{"list directory entries", "listDirectory"},
		{"save the presentation as pptx", "save-presentation"},
		{"caculate an expression", "calculate"}, // typo: nearest indexed spelling
		{"查询股票价格", "get_stock_quote"},           // Chinese, by character bigrams
		{"read the contents of /etc/hosts", "read_file"},
	}
	for _, tt := range tests {
		for _, m := range allModes {
			hits := ix.RouteMode(tt.query, 3, m)
			if len(hits) == 0 || hits[0].Name != tt.want {
				t.Errorf("RouteMode(%q, 3, %v) = %v, want %s first", tt.query, m, names(hits), tt.want)
			}
		}
	}
}

func TestRouteResultShape(t *testing.T) {
	ix := Build(miniDocs(t))
	for _, m := range allModes {
		for _, k := range []int{1, 2, 5, 100} {
			hits := ix.RouteMode("write the weather forecast to a file", k, m)
			if len(hits) == 0 || len(hits) > k {
				t.Errorf("%v k=%d: got %d hits", m, k, len(hits))
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].Score > hits[i-1].Score {
					t.Errorf("%v k=%d: hits not best first: %v", m, k, hits)
				}
			}
		}
		if got := ix.RouteMode("write a file", 0, m); got != nil {
			t.Errorf("%v k=0: got %v, want nil", m, got)
		}
		if got := ix.RouteMode("zzzz qqqq", 5, m); len(got) != 0 {
			t.Errorf("%v unmatched query: got %v, want none", m, got)
		}
	}
	if got := New().Route("anything", 5); got != nil {
		t.Errorf("empty index: got %v", got)
	}
}

func TestHierarchicalKeepsToTopDomains(t *testing.T) {
	ix := Build(miniDocs(t))
	hits := ix.RouteMode("weather forecast", 3, Hierarchical)
	if len(hits) == 0 || hits[0].Server != "Weather Service" {
		t.Fatalf("got %v, want Weather Service first", hits)
	}
	// With k no larger than the opened domains hold, every hit comes from
	// the minDomains best domains.
	doms := map[string]bool{}
	for _, h := range ix.RouteMode("weather forecast file", 5, Hierarchical) {
		doms[h.Server] = true
	}
	if len(doms) > ix.cfg.minDomains {
		t.Errorf("hits span %d domains, want at most %d", len(doms), ix.cfg.minDomains)
	}
}

func TestUpsertReplaces(t *testing.T) {
	ix := New()
	ix.Upsert(Doc{Server: "s", Name: "tool", Description: "weather forecast for a city"})
	ix.Upsert(Doc{Server: "s", Name: "other", Description: "stock quotes"})
	if got := names(ix.Route("weather", 5)); !slices.Equal(got, []string{"tool"}) {
		t.Fatalf("before replace: %v", got)
	}
	ix.Upsert(Doc{Server: "s", Name: "tool", Description: "translate text between languages"})
	if got := ix.Len(); got != 2 {
		t.Errorf("Len = %d, want 2", got)
	}
	for _, m := range allModes {
		if got := names(ix.RouteMode("weather forecast", 5, m)); len(got) != 0 {
			t.Errorf("%v: old description still matches: %v", m, got)
		}
		// Hierarchical also lists the unmatched tools of an opened domain,
		// after the matching ones.
		if got := names(ix.RouteMode("translate", 5, m)); len(got) == 0 || got[0] != "tool" ||
			m != Hierarchical && len(got) != 1 {
			t.Errorf("%v: new description: %v", m, got)
		}
	}
	// The same name under another server is another tool.
	ix.Upsert(Doc{Server: "t", Name: "tool", Description: "translate speech"})
	if got := ix.Len(); got != 3 {
		t.Errorf("Len = %d, want 3", got)
	}
}

func TestRemove(t *testing.T) {
	docs := miniDocs(t)
	ix := Build(docs)
	ix.Remove("Files", "write_file")
	ix.Remove("Files", "no_such_tool")
	ix.Remove("No such server", "read_file")
	if got, want := ix.Len(), len(docs)-1; got != want {
		t.Errorf("Len = %d, want %d", got, want)
	}
	for _, m := range allModes {
		for _, q := range []string{"write file", "overwrite a file with new content", "write_file", "save"} {
			for _, h := range ix.RouteMode(q, 100, m) {
				if h.Name == "write_file" {
					t.Errorf("%v %q: removed tool returned", m, q)
				}
			}
		}
	}
	// Removing everything leaves no postings, domains or lengths behind.
	for _, d := range docs {
		ix.Remove(d.Server, d.Name)
	}
	if ix.Len() != 0 || ix.ti.n != 0 || ix.di.n != 0 || len(ix.ti.post) != 0 || len(ix.di.post) != 0 ||
		len(ix.domKeys) != 0 || len(ix.ti.dels) != 0 {
		t.Errorf("index not empty after removing all: len %d, tools %d, domains %d, terms %d/%d, deletions %d",
			ix.Len(), ix.ti.n, ix.di.n, len(ix.ti.post), len(ix.di.post), len(ix.ti.dels))
	}
	for f := range numFields {
		if ix.ti.sumLen[f] != 0 || ix.di.sumLen[f] != 0 {
			t.Errorf("field %d: summed lengths %v/%v, want 0", f, ix.ti.sumLen[f], ix.di.sumLen[f])
		}
	}
	if got := ix.Route("file", 5); len(got) != 0 {
		t.Errorf("empty index routed %v", got)
	}
}

// TestIncrementalMatchesFresh checks that an index that went through adds,
// replacements and removals scores exactly like one built fresh from the
// same final tools.
func TestIncrementalMatchesFresh(t *testing.T) {
	docs := miniDocs(t)
	fresh := Build(docs)

	ix := New()
	for i, d := range docs {
		junk := Doc{Server: d.Server, Name: fmt.Sprintf("junk%d", i), Description: "temporary forecast file slide"}
		ix.Upsert(junk)
		changed := d
		changed.Description = "something else entirely, about files and weather"
		changed.ServerDescription = "a different server description"
		ix.Upsert(changed)
		ix.Upsert(Doc{Server: "Transient", Name: "t", Description: "presentation calculator"})
		ix.Remove("Transient", "t")
		ix.Remove(junk.Server, junk.Name)
	}
	for i := len(docs) - 1; i >= 0; i-- { // restore, in another order
		ix.Upsert(docs[i])
	}

	queries := []string{"weather forecast", "write the file", "save presentation pptx", "calculate 2+2", "股票", "list directory", "description"}
	for _, q := range queries {
		for _, m := range allModes {
			want := scoresByTool(fresh.RouteMode(q, 1000, m))
			got := scoresByTool(ix.RouteMode(q, 1000, m))
			if len(got) != len(want) {
				t.Errorf("%v %q: %d hits, want %d", m, q, len(got), len(want))
			}
			for k, w := range want {
				if g, ok := got[k]; !ok || math.Abs(g-w) > 1e-9 {
					t.Errorf("%v %q: %v scored %v, want %v", m, q, k, g, w)
				}
			}
		}
	}
}

func scoresByTool(hits []Hit) map[docKey]float64 {
	m := map[docKey]float64{}
	for _, h := range hits {
		m[docKey{h.Server, h.Name}] = h.Score
	}
	return m
}

func TestRouteIsDeterministic(t *testing.T) {
	docs := miniDocs(t)
	a, b := Build(docs), Build(docs)
	for _, q := range []string{"file", "forecast weather city", "presentation slide"} {
		for _, m := range allModes {
			if x, y := a.RouteMode(q, 10, m), b.RouteMode(q, 10, m); !slices.Equal(x, y) {
				t.Errorf("%v %q: %v then %v", m, q, x, y)
			}
		}
	}
}

// TestConcurrentRouteAndUpsert is meant for -race: readers route while
// writers add, replace and remove tools.
func TestConcurrentRouteAndUpsert(t *testing.T) {
	docs := miniDocs(t)
	ix := Build(docs)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := range 200 {
				d := docs[i%len(docs)]
				d.Name = fmt.Sprintf("%s_%d_%d", d.Name, w, i%7)
				d.Description = fmt.Sprintf("%s revision %d", d.Description, i)
				ix.Upsert(d)
				if i%3 == 0 {
					ix.Remove(d.Server, d.Name)
				}
			}
		})
	}
	for r := range 4 {
		wg.Go(func() {
			for i := range 200 {
				m := allModes[(r+i)%len(allModes)]
				hits := ix.RouteMode("write the weather forecast to a file", 5, m)
				if len(hits) == 0 {
					t.Errorf("%v: no hits while writers run", m)
					return
				}
				_ = ix.Len()
			}
		})
	}
	wg.Wait()
	for _, d := range docs {
		if len(ix.RouteMode(d.Name, 1, Flat)) == 0 {
			t.Errorf("original tool %s not found after concurrent writes", d.Name)
		}
	}
}

func TestParamsFromSchema(t *testing.T) {
	tests := []struct {
		name, schema string
		want         []Param
	}{
		{"object", `{"type":"object","properties":{"path":{"type":"string","description":"File path"},"count":{"type":"integer"}}}`,
			[]Param{{"count", ""}, {"path", "File path"}}},
		{"title when no description", `{"properties":{"q":{"title":"Query text"}}}`, []Param{{"q", "Query text"}}},
		{"schema in a JSON string", `"{\"properties\":{\"a\":{\"description\":\"x\"}}}"`, []Param{{"a", "x"}}},
		{"no properties", `{"type":"object"}`, []Param{}},
		{"not JSON", `{nope`, nil},
		{"empty", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParamsFromSchema(json.RawMessage(tt.schema))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
	got := ParamsFromMap(map[string]any{"properties": map[string]any{"city": map[string]any{"description": "City name"}}})
	if want := []Param{{"city", "City name"}}; !slices.Equal(got, want) {
		t.Errorf("ParamsFromMap = %#v, want %#v", got, want)
	}
}

func TestNearest(t *testing.T) {
	x := newInvIndex(true)
	id := x.alloc()
	x.apply(id, map[string]fieldVec{"calcul": {1}, "browser": {1}, "download": {1}, "pptx": {1}})
	tests := map[string]string{
		"cacul":     "calcul",   // missing letter
		"broswer":   "browser",  // transposition
		"downlaod":  "download", // transposition
		"dowmload":  "download", // substitution
		"downloadx": "download", // extra letter
		"ppt":       "",         // too short to guess
		"elephant":  "",
	}
	for q, want := range tests {
		if got := x.nearest(q); got != want {
			t.Errorf("nearest(%q) = %q, want %q", q, got, want)
		}
	}
	x.apply(id, map[string]fieldVec{"browser": {-1}})
	if got := x.nearest("broswer"); got != "" {
		t.Errorf("after removing the term, nearest(broswer) = %q", got)
	}
}
