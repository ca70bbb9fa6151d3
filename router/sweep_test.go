package router

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
)

var (
	sweep    = flag.Bool("router.sweep", false, "run TestSweep and TestSweepLSA: parameter sensitivity on the shared dataset")
	sweepLSA = flag.Int("router.sweep.lsa", 0, "latent dimensions for TestSweep's index (0: the signal off, as by default)")
)

// TestSweep varies one ranking parameter at a time around the defaults and
// prints Route's (Fused) and Flat's metrics as a Markdown table. It is how
// README.md's "Parameters" section was produced; -router.sweep.lsa 128 runs
// it with the latent signal on. It asserts nothing.
func TestSweep(t *testing.T) {
	if !*sweep {
		t.Skip("run with -router.sweep")
	}
	docs, tasks, err := LoadDataset(datasetDir(t))
	if err != nil {
		t.Fatal(err)
	}
	type variant struct {
		name string
		set  func(*config)
	}
	var vs []variant
	add := func(name string, set func(*config)) { vs = append(vs, variant{name, set}) }
	add("defaults", func(*config) {})
	for _, w := range []float64{1, 2, 5} {
		add(fmt.Sprintf("name weight %g", w), func(c *config) { c.tool.w[fName] = w })
	}
	for _, w := range []float64{0, 1} {
		add(fmt.Sprintf("params weight %g", w), func(c *config) { c.tool.w[fParams] = w })
	}
	for _, w := range []float64{0, 1} {
		add(fmt.Sprintf("domain-field weight %g", w), func(c *config) { c.tool.w[fDomain] = w })
	}
	for _, k1 := range []float64{0.8, 2} {
		add(fmt.Sprintf("k1 %g", k1), func(c *config) { c.tool.k1 = k1 })
	}
	for _, b := range []float64{0.3, 1} {
		add(fmt.Sprintf("b (all fields) %g", b), func(c *config) { c.tool.b = [numFields]float64{b, b, b, b} })
	}
	for _, v := range []float64{0, 0.1, 0.5} {
		add(fmt.Sprintf("beta (domain share) %g", v), func(c *config) { c.beta = v })
	}
	add("domain bonus from tool text too", func(c *config) { c.domainOwn = c.domain })
	for _, v := range []float64{0, 0.1, 0.5, 1} {
		add(fmt.Sprintf("name coverage %g", v), func(c *config) { c.nameCoverage = v })
	}
	add("fuzzy off", func(c *config) { c.fuzzy = 0 })

	var b strings.Builder
	b.WriteString("| variant | fused r@5 | fused r@10 | fused step | flat r@5 | flat r@10 | flat step |\n|---|---|---|---|---|---|---|\n")
	for _, v := range vs {
		c := defaultConfig()
		v.set(&c)
		ix := Build(docs, withConfig(c), WithLSA(*sweepLSA))
		fu := Score("", func(q string, k int) []Hit { return ix.RouteMode(q, k, Fused) }, tasks)
		fl := Score("", func(q string, k int) []Hit { return ix.RouteMode(q, k, Flat) }, tasks)
		fmt.Fprintf(&b, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", v.name,
			fu.RecallAt5, fu.RecallAt10, fu.StepRecall, fl.RecallAt5, fl.RecallAt10, fl.StepRecall)
	}
	t.Logf("\n%s", b.String())
}

// TestSweepLSA varies the latent semantic signal's two parameters (WithLSA's
// dimensions and the weight of its cosine) around the values first tried
// (128 and 0.3, set before measuring) and prints Route's metrics on all
// tasks and on each half (odd and even lines of the task file), so that a
// gain that holds on one half only shows as noise. It asserts nothing.
func TestSweepLSA(t *testing.T) {
	if !*sweep {
		t.Skip("run with -router.sweep")
	}
	docs, tasks, err := LoadDataset(datasetDir(t))
	if err != nil {
		t.Fatal(err)
	}
	var halves [2][]Task
	for i, tk := range tasks {
		halves[i%2] = append(halves[i%2], tk)
	}
	var b strings.Builder
	b.WriteString("| dims | weight | fused r@5 | fused r@10 | fused step | flat step | half A r@5 | half A step | half B r@5 | half B step |\n|---|---|---|---|---|---|---|---|---|---|\n")
	row := func(dims int, weight float64) {
		c := defaultConfig()
		c.lsa = weight
		ix := Build(docs, withConfig(c), WithLSA(dims))
		fused := func(q string, k int) []Hit { return ix.RouteMode(q, k, Fused) }
		all := Score("", fused, tasks)
		flat := Score("", func(q string, k int) []Hit { return ix.RouteMode(q, k, Flat) }, tasks)
		ha, hb := Score("", fused, halves[0]), Score("", fused, halves[1])
		fmt.Fprintf(&b, "| %d | %g | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", dims, weight,
			all.RecallAt5, all.RecallAt10, all.StepRecall, flat.StepRecall, ha.RecallAt5, ha.StepRecall, hb.RecallAt5, hb.StepRecall)
	}
	row(0, 0)
	for _, dims := range []int{64, 128, 192} {
		for _, w := range []float64{0.15, 0.3, 0.45} {
			row(dims, w)
		}
	}
	row(32, 0.3)

	// How far the latent space reaches: the gold tools that share no term
	// with their task's text (name and description), and how many of them
	// the latent cosine alone ranks in its top 10.
	ix := Build(docs, WithLSA(128))
	toolTerms := map[string]map[string]bool{}
	for _, d := range docs {
		m := map[string]bool{}
		for _, tk := range tokens(d.Name + " " + d.Description) {
			m[tk] = true
		}
		toolTerms[d.Name] = m
	}
	total, disjoint, reached := 0, 0, 0
	for _, tk := range tasks {
		inTask := map[string]bool{}
		for _, x := range tokens(tk.Query) {
			inTask[x] = true
		}
		top := names(ix.latentOnly(tk.Query, 10))
		for _, g := range tk.Gold {
			total++
			shared := false
			for x := range toolTerms[g] {
				shared = shared || inTask[x]
			}
			if !shared {
				disjoint++
				if slices.Contains(top, g) {
					reached++
				}
			}
		}
	}
	fmt.Fprintf(&b, "\n%d of %d gold tools share no term with their task; the latent cosine alone (128 dims) ranks %d of them in its top 10.\n", disjoint, total, reached)
	t.Logf("\n%s", b.String())
}

// latentOnly ranks tools by the latent cosine alone.
func (ix *Index) latentOnly(query string, k int) []Hit {
	q := queryTerms(query)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	q = ix.resolve(q)
	sc := make([]float64, len(ix.tools))
	return ix.hits(topK(ix.lsaScores(q, sc, nil, 1), sc, k), sc)
}
