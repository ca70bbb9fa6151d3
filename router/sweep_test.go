package router

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

var sweep = flag.Bool("router.sweep", false, "run TestSweep: one-at-a-time parameter sensitivity on the shared dataset")

// TestSweep varies one ranking parameter at a time around the defaults and
// prints Route's (Fused) and Flat's metrics as a Markdown table. It is how
// README.md's "Parameters" section was produced; it asserts nothing.
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
		ix := Build(docs, withConfig(c))
		fu := Score("", func(q string, k int) []Hit { return ix.RouteMode(q, k, Fused) }, tasks)
		fl := Score("", func(q string, k int) []Hit { return ix.RouteMode(q, k, Flat) }, tasks)
		fmt.Fprintf(&b, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", v.name,
			fu.RecallAt5, fu.RecallAt10, fu.StepRecall, fl.RecallAt5, fl.RecallAt10, fl.StepRecall)
	}
	t.Logf("\n%s", b.String())
}
