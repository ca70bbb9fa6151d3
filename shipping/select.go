package shipping

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"adaptbot/contract"
	"adaptbot/registry"
)

// Source is where the tools to ship come from; *registry.Registry is one.
type Source interface {
	Entry(name string) (registry.Entry, bool)
	Tool(name string) (registry.Tool, bool)
	Examples(name string) []byte
}

var _ Source = (*registry.Registry)(nil)

// Item is one tool to ship: its serving version and what it comes with.
type Item struct {
	Entry registry.Entry
	Code  []byte
	// Examples is the tool's examples.json, or nil.
	Examples []byte
	// Spec is what the source declares.
	Spec *contract.Spec
	// Asked: the tool was named; otherwise it came along as a callee.
	Asked bool
}

// Select returns the tools named, and every tool they call at any depth,
// sorted by name. It refuses, naming the tool, one that does not exist,
// is broken or pending review (an export ships only approved, serving
// versions), or calls a tool that does not serve.
func Select(src Source, names []string) ([]Item, error) {
	if len(names) == 0 {
		return nil, refuse(NotShippable, "", "", "name at least one tool")
	}
	items := map[string]*Item{}
	var visit func(name, caller string) error
	visit = func(name, caller string) error {
		if it, ok := items[name]; ok {
			it.Asked = it.Asked || caller == ""
			return nil
		}
		it, err := item(src, name, caller)
		if err != nil {
			return err
		}
		items[name] = it
		for _, callee := range it.Spec.Calls {
			if err := visit(callee, name); err != nil {
				return err
			}
		}
		return nil
	}
	for _, name := range names {
		if err := contract.ValidName(name); err != nil {
			return nil, refuse(NotShippable, name, "", "%v", err)
		}
		if err := visit(name, ""); err != nil {
			return nil, err
		}
	}
	out := make([]Item, 0, len(items))
	for _, it := range items {
		out = append(out, *it)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entry.Name < out[j].Entry.Name })
	return out, nil
}

// item reads one tool; caller, if set, is the tool that calls it.
func item(src Source, name, caller string) (*Item, error) {
	who := name
	if caller != "" {
		who = fmt.Sprintf("%s (which %s calls)", name, caller)
	}
	e, ok := src.Entry(name)
	if !ok && caller != "" {
		return nil, refuse(NotShippable, name, "", "%s calls %s, which is not a tool here", caller, name)
	}
	if !ok {
		return nil, refuse(NotShippable, name, "", "no tool named %q", name)
	}
	switch e.Status {
	case registry.Pending:
		if e.PendingVersion != 0 && e.Version == 0 {
			return nil, refuse(NotShippable, name, "", "%s is pending review: version %d waits for approval and nothing of it serves yet; approve it first (adaptbot tools approve %s)", who, e.PendingVersion, name)
		}
		return nil, refuse(NotShippable, name, "", "%s is pending review: version %d waits for approval while version %d serves; approve it or drop the change, then ship it", who, e.PendingVersion, e.Version)
	case registry.Broken:
		return nil, refuse(NotShippable, name, "", "%s is broken: its file fails its checks (%s); fix it or roll it back first", who, firstLine(e.LastError))
	}
	t, ok := src.Tool(name)
	if !ok {
		return nil, refuse(NotShippable, name, "", "%s does not serve", who)
	}
	spec, err := contract.Parse(name, t.Code)
	if err != nil {
		return nil, refuse(NotShippable, name, "", "%s: its serving source breaks the contract: %v", who, err)
	}
	it := &Item{Entry: t.Entry, Code: t.Code, Spec: spec, Asked: caller == ""}
	if ex := src.Examples(name); ex != nil {
		if !json.Valid(ex) {
			return nil, refuse(NotShippable, name, "", "%s: its %s is not valid JSON", who, registry.ExamplesFile)
		}
		it.Examples = ex
	}
	return it, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
