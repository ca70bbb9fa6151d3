package router

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeEmbedder scripts an Embedder with function fields.
type fakeEmbedder struct {
	embedDocuments func(ctx context.Context, texts []string) ([][]float32, error)
	embedQuery     func(ctx context.Context, text string) ([]float32, error)
}

var _ Embedder = (*fakeEmbedder)(nil)

func (f *fakeEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return f.embedDocuments(ctx, texts)
}

func (f *fakeEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	return f.embedQuery(ctx, text)
}

// conceptVector is a toy embedding: one dimension per concept, set when the
// text mentions any of its words. It knows that rain is weather, which the
// lexical index cannot.
func conceptVector(text string) []float32 {
	concepts := [][]string{
		{"weather", "forecast", "rain", "temperature"},
		{"file", "disk", "directory"},
		{"presentation", "slide"},
	}
	v := make([]float32, len(concepts))
	text = strings.ToLower(text)
	for i, words := range concepts {
		for _, w := range words {
			if strings.Contains(text, w) {
				v[i] = 1
			}
		}
	}
	return v
}

func conceptEmbedder(embedded *[]string, mu *sync.Mutex) *fakeEmbedder {
	return &fakeEmbedder{
		embedDocuments: func(_ context.Context, texts []string) ([][]float32, error) {
			mu.Lock()
			*embedded = append(*embedded, texts...)
			mu.Unlock()
			out := make([][]float32, len(texts))
			for i, t := range texts {
				out[i] = conceptVector(t)
			}
			return out, nil
		},
		embedQuery: func(_ context.Context, text string) ([]float32, error) { return conceptVector(text), nil },
	}
}

func TestDenseAddsSemanticMatches(t *testing.T) {
	var embedded []string
	var mu sync.Mutex
	ix := Build(miniDocs(t), WithEmbedder(conceptEmbedder(&embedded, &mu)))
	if err := ix.EmbedPending(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := Build(miniDocs(t)).Route("will it rain", 3); len(got) != 0 {
		t.Fatalf("lexical alone matched %v; the test needs a query it cannot match", got)
	}
	hits := ix.Route("will it rain", 3)
	if len(hits) == 0 || hits[0].Server != "Weather Service" {
		t.Errorf("Route(will it rain) = %v, want a weather tool first", hits)
	}
	if len(embedded) != ix.Len() {
		t.Errorf("embedded %d tools, want %d", len(embedded), ix.Len())
	}

	// Only a changed tool is embedded again.
	ix.Route("file", 3)
	ix.Upsert(Doc{Server: "Files", Name: "read_file", Description: "Read a file from disk."})
	ix.Route("file", 3)
	if got, want := len(embedded), ix.Len()+1; got != want {
		t.Errorf("after one change, %d embeddings in all, want %d", got, want)
	}
	ix.Remove("Files", "read_file")
	for _, h := range ix.Route("read a file from disk", 10) {
		if h.Name == "read_file" {
			t.Errorf("removed tool returned by the dense path: %v", h)
		}
	}
}

func TestDenseFailureFallsBackToLexical(t *testing.T) {
	boom := errors.New("model down")
	calls := 0
	failDocs := &fakeEmbedder{
		embedDocuments: func(context.Context, []string) ([][]float32, error) { calls++; return nil, boom },
		embedQuery:     func(_ context.Context, text string) ([]float32, error) { return conceptVector(text), nil },
	}
	failQuery := &fakeEmbedder{
		embedDocuments: func(_ context.Context, texts []string) ([][]float32, error) {
			return make([][]float32, len(texts)), nil
		},
		embedQuery: func(context.Context, string) ([]float32, error) { return nil, boom },
	}
	lexical := Build(miniDocs(t))
	for name, e := range map[string]Embedder{"documents fail": failDocs, "query fails": failQuery} {
		ix := Build(miniDocs(t), WithEmbedder(e))
		for _, q := range []string{"weather forecast", "save the presentation", "will it rain"} {
			for _, m := range allModes {
				if got, want := ix.RouteMode(q, 5, m), lexical.RouteMode(q, 5, m); !slices.Equal(got, want) {
					t.Errorf("%s, %v %q: got %v, want the lexical %v", name, m, q, got, want)
				}
			}
		}
	}
	// After a failure the model is left alone for a while.
	if calls != 1 {
		t.Errorf("EmbedDocuments called %d times, want 1 (then backing off)", calls)
	}
}
