package router

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSymEigen checks A·v = λ·v for a random symmetric matrix, with the
// eigenvalues in decreasing order.
func TestSymEigen(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 12
	g := newDense(n, n)
	for i := range n {
		for j := i; j < n; j++ {
			x := rng.NormFloat64()
			g.a[i*n+j], g.a[j*n+i] = x, x
		}
	}
	vals, vecs := symEigen(g)
	for j := range n {
		if j > 0 && vals[j] > vals[j-1] {
			t.Errorf("eigenvalues out of order: %v", vals)
		}
		for i := range n {
			var av float64
			for p := range n {
				av += g.a[i*n+p] * vecs.a[p*n+j]
			}
			if d := math.Abs(av - vals[j]*vecs.a[i*n+j]); d > 1e-9 {
				t.Fatalf("eigenpair %d: residual %g", j, d)
			}
		}
	}
}

// TestLeftSingular checks the randomized SVD against the exact one on
// matrices small enough that the sketch spans the whole range: the vectors
// are orthonormal and Aᵀ·u_j has length σ_j, the square roots of A·Aᵀ's
// eigenvalues. Both a tall and a wide matrix are tried, since the sketch is
// taken on the smaller side.
func TestLeftSingular(t *testing.T) {
	for _, shape := range [][2]int{{30, 8}, {8, 30}} {
		m, n := shape[0], shape[1]
		rng := rand.New(rand.NewPCG(5, 6))
		a := &sparse{rows: make([][]entry, m), cols: n}
		full := newDense(m, n)
		for i := range m {
			for j := range n {
				if rng.Float64() < 0.4 {
					v := rng.Float64()
					a.rows[i] = append(a.rows[i], entry{col: int32(j), v: v})
					full.a[i*n+j] = v
				}
			}
		}
		k := min(m, n) - 2
		u, sigma := leftSingular(a, k)
		// A·Aᵀ = (Aᵀ)ᵀ·Aᵀ; its eigenvalues are the squared singular values.
		at := newDense(n, m)
		for i := range m {
			for j := range n {
				at.a[j*m+i] = full.a[i*n+j]
			}
		}
		want, _ := symEigen(gram(at))
		for j := range k {
			if d := math.Abs(sigma[j] - math.Sqrt(want[j])); d > 1e-6 {
				t.Errorf("%dx%d: sigma[%d] = %v, want %v", m, n, j, sigma[j], math.Sqrt(want[j]))
			}
			var norm2, ortho float64
			for c := range n { // (Aᵀ·u_j)[c]
				var x float64
				for i := range m {
					x += full.a[i*n+c] * u.a[i*k+j]
				}
				norm2 += x * x
			}
			for i := range m {
				ortho += u.a[i*k+j] * u.a[i*k+(j+1)%k]
			}
			if d := math.Abs(math.Sqrt(norm2) - sigma[j]); d > 1e-6 {
				t.Errorf("%dx%d: |Aᵀu_%d| = %v, want %v", m, n, j, math.Sqrt(norm2), sigma[j])
			}
			if math.Abs(ortho) > 1e-9 {
				t.Errorf("%dx%d: u_%d · u_%d = %v", m, n, j, (j+1)%k, ortho)
			}
		}
	}
}

// cooccurrenceDocs is a catalog where "rain" is in one tool only, but that
// tool shares its other words with a second weather tool.
func cooccurrenceDocs() []Doc {
	return []Doc{
		{Server: "Weather", Name: "umbrella_advice", Description: "Say whether rain is expected: weather, forecast, umbrella."},
		{Server: "Weather", Name: "daily_outlook", Description: "Weather forecast outlook, umbrella or sunglasses."},
		{Server: "Weather", Name: "wind_report", Description: "Weather wind speed forecast."},
		{Server: "Files", Name: "write_file", Description: "Write content to a file on disk."},
		{Server: "Files", Name: "read_file", Description: "Read a file from disk."},
		{Server: "Files", Name: "delete_file", Description: "Delete a file on disk."},
		{Server: "Slides", Name: "add_slide", Description: "Add a slide to a presentation deck."},
		{Server: "Slides", Name: "save_deck", Description: "Save the presentation deck."},
		{Server: "Math", Name: "calculate", Description: "Evaluate an arithmetic expression."},
	}
}

// TestLSAFindsCooccurringTool checks what the latent signal is for: a
// request word found in one tool brings in tools that share that tool's
// other words, which BM25F alone cannot rank.
func TestLSAFindsCooccurringTool(t *testing.T) {
	docs := cooccurrenceDocs()
	lexical := names(Build(docs).RouteMode("rain", 5, Flat))
	if slices.Contains(lexical, "daily_outlook") {
		t.Fatalf("lexical ranking already has daily_outlook: %v", lexical)
	}
	for _, m := range []Mode{Fused, Flat} {
		got := names(Build(docs, WithLSA(4)).RouteMode("rain", 5, m))
		if len(got) == 0 || got[0] != "umbrella_advice" || !slices.Contains(got, "daily_outlook") {
			t.Errorf("%v with LSA: %v, want umbrella_advice first and daily_outlook among them", m, got)
		}
		if slices.Contains(got, "calculate") {
			t.Errorf("%v with LSA ranked an unrelated tool: %v", m, got)
		}
	}
}

// TestLSAFoldingIn checks that an Upsert folds the tool into the existing
// basis (no recomputation below the threshold), that a Remove clears its
// vector, and that RefreshSemantic then gives an index that went through
// changes exactly the scores of one built fresh.
func TestLSAFoldingIn(t *testing.T) {
	docs := cooccurrenceDocs()
	ix := Build(docs, WithLSA(4))
	basis := ix.lsa.basis
	extra := Doc{Server: "Weather", Name: "storm_alert", Description: "Rain and wind alerts from the weather forecast."}
	ix.Upsert(extra)
	ix.mu.RLock()
	id := ix.keys[docKey{extra.Server, extra.Name}]
	if ix.lsa.basis != basis {
		t.Errorf("one Upsert recomputed the basis")
	}
	want := make([]float32, 4)
	ix.cfg.foldTool(basis, ix.toolTermsLocked(extra).tf, want)
	if got := ix.lsa.vecs[int(id)*4 : int(id)*4+4]; !slices.Equal(got, want) {
		t.Errorf("folded vector %v, want %v", got, want)
	}
	ix.mu.RUnlock()
	ix.Remove(extra.Server, extra.Name)
	ix.mu.RLock()
	if v := ix.lsa.vecs[int(id)*4 : int(id)*4+4]; slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
		t.Errorf("removed tool keeps vector %v", v)
	}
	ix.mu.RUnlock()

	// Churn, then refresh: the basis depends on the tools, not on their ids
	// or the order they came in.
	for i := range 5 {
		ix.Upsert(Doc{Server: "Tmp", Name: fmt.Sprintf("t%d", i), Description: "temporary weather file slide"})
	}
	for i := range 5 {
		ix.Remove("Tmp", fmt.Sprintf("t%d", i))
	}
	ix.Remove(docs[0].Server, docs[0].Name)
	ix.Upsert(docs[0])
	ix.RefreshSemantic()
	fresh := Build(docs, WithLSA(4))
	for _, q := range []string{"rain", "weather umbrella", "save the deck to disk", "file"} {
		for _, m := range []Mode{Fused, Flat} {
			want := scoresByTool(fresh.RouteMode(q, 100, m))
			got := scoresByTool(ix.RouteMode(q, 100, m))
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

// toolTermsLocked is toolTerms for tests, which may not hold wmu.
func (ix *Index) toolTermsLocked(d Doc) docTerms {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	return ix.toolTerms(d)
}

// TestLSABackgroundBasis checks that an index filled by Upserts alone gets
// a basis in the background once it holds enough tools, and a new one each
// time the changes reach the size of the last.
func TestLSABackgroundBasis(t *testing.T) {
	ix := New(WithLSA(4))
	docs := ScaleDocs(cooccurrenceDocs(), 40)
	basisTools := func() int {
		ix.mu.RLock()
		defer ix.mu.RUnlock()
		if ix.lsa.basis == nil {
			return 0
		}
		return ix.lsa.basis.tools
	}
	waitFor := func(cond func(int) bool) int {
		deadline := time.Now().Add(10 * time.Second)
		for {
			n := basisTools()
			if cond(n) || time.Now().After(deadline) {
				return n
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for _, d := range docs[:lsaMinTools] {
		ix.Upsert(d)
	}
	if n := waitFor(func(n int) bool { return n > 0 }); n != lsaMinTools {
		t.Fatalf("basis from %d tools after %d Upserts, want %d", n, lsaMinTools, lsaMinTools)
	}
	for _, d := range docs[lsaMinTools:] {
		ix.Upsert(d)
	}
	// A recompute starts whenever the changes since the last basis reach its
	// size, so once none is pending the basis covers more than half of the
	// tools (how much more depends on how fast the background runs).
	if n := waitFor(func(n int) bool { return n > len(docs)/2 }); n <= len(docs)/2 {
		t.Errorf("basis from %d tools after %d Upserts, want more than half", n, len(docs))
	}
	// ScaleDocs makes renamed copies (umbrella_advice_v1, ...) that tie with
	// the original; any of them is the right answer.
	if got := ix.RouteMode("rain", 3, Flat); len(got) == 0 || !strings.HasPrefix(got[0].Name, "umbrella_advice") {
		t.Errorf("after background bases: %v", names(got))
	}
}

// TestLSAConcurrent is meant for -race: routes run while writers change
// tools and background bases are computed and swapped in.
func TestLSAConcurrent(t *testing.T) {
	docs := miniDocs(t)
	ix := New(WithLSA(8))
	for _, d := range docs {
		ix.Upsert(d)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 300 {
			d := docs[i%len(docs)]
			d.Name = fmt.Sprintf("%s_%d", d.Name, i%13)
			ix.Upsert(d)
			if i%4 == 0 {
				ix.Remove(d.Server, d.Name)
			}
			if i%100 == 99 {
				ix.RefreshSemantic()
			}
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
			ix.RefreshSemantic()
			if got := ix.Route("weather forecast", 3); len(got) == 0 {
				t.Error("no hits after concurrent writes")
			}
			return
		default:
		}
		if hits := ix.RouteMode("write the weather forecast to a file", 5, allModes[i%len(allModes)]); len(hits) == 0 {
			t.Fatal("no hits while writers run")
		}
	}
}

// TestWithLSAOff checks that WithLSA(0) keeps no latent state and that the
// default Index has none either.
func TestWithLSAOff(t *testing.T) {
	for _, ix := range []*Index{New(), New(WithLSA(0)), New(WithLSA(-3))} {
		if ix.lsa != nil {
			t.Errorf("latent state with the signal off")
		}
		ix.RefreshSemantic() // does nothing
	}
}
