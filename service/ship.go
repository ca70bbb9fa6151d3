package service

import (
	"bytes"
	"context"
	"sort"
	"strings"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/identity"
	"adaptbot/shipping"
	"adaptbot/traces"
)

// Import writes a bundle's tools into the registry, all or none. Nothing in
// a bundle is trusted: every tool goes through the gate first, and a
// tampered sum, a path that escapes, a forbidden import or a name taken
// (without Replace) refuses the whole import with nothing written. With
// review on, imported tools wait for approval. Importing is a builder's
// action; each tool's name is locked in the cluster while it is written.
func (s *Service) Import(ctx context.Context, req adaptbot.ImportRequest) (*adaptbot.ImportResult, error) {
	ctx, o, err := s.start(ctx, "import", "", identity.Build)
	o.fallback = adaptbot.Failed
	o.row = benchmarks.Row{RequestID: o.id, Query: "import a bundle", Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildImport,
		ParamExtraction: benchmarks.NA, ToolExecution: benchmarks.NA}
	o.rec.Kind, o.rec.Query = traces.Build, "import a bundle"
	var b *shipping.Bundle
	if err == nil && s.d.Generator == nil {
		err = errNoGenerator
	}
	if err == nil {
		b, err = shipping.ReadBundle(bytes.NewReader(req.Bundle))
	}
	if err == nil {
		err = s.writable()
	}
	if err == nil {
		var release func()
		release, err = s.lockAll(ctx, b.Names(), req.Rename)
		defer release()
	}
	var imported []shipping.Imported
	if err == nil {
		o.row.Query = "import " + strings.Join(b.Names(), ", ")
		imported, err = shipping.Import(ctx, b, s.d.Registry, s.d.Generator, shipping.ImportOptions{Rename: req.Rename, Replace: req.Replace})
	}
	for _, t := range imported {
		o.row.Tools = append(o.row.Tools, t.Name)
	}
	o.rec.Result = marshal(map[string]any{"imported": imported})
	if err := o.finish(err); err != nil {
		return nil, err
	}
	return &adaptbot.ImportResult{Imported: imported}, nil
}

// lockAll takes the cluster lock on the names the tools will have, in one
// order for every importer, so that two imports never wait on each other.
func (s *Service) lockAll(ctx context.Context, names []string, rename map[string]string) (func(), error) {
	set := map[string]bool{}
	for _, n := range names {
		if to, ok := rename[n]; ok {
			n = to
		}
		set[n] = true
	}
	sorted := make([]string, 0, len(set))
	for n := range set {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var releases []func()
	release := func() {
		for _, r := range releases {
			r()
		}
	}
	for _, n := range sorted {
		r, err := s.lock(ctx, n)
		if err != nil {
			release()
			return func() {}, err
		}
		releases = append(releases, r)
	}
	return release, nil
}
