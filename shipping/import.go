package shipping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"slices"
	"sort"
	"strings"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/registry"
)

// Checker puts a tool through the gate without saving it;
// *generator.Generator is one.
type Checker interface {
	Check(ctx context.Context, name string, src []byte, examples []adaptbot.Example) (problems []string, err error)
}

// Target is the registry an import writes to; *registry.Registry is one.
type Target interface {
	Source
	Put(ctx context.Context, name string, src []byte, o registry.PutOptions) (registry.Entry, error)
	Delete(ctx context.Context, name string) (registry.Entry, error)
	Rollback(ctx context.Context, name string, v int) (registry.Entry, error)
}

var _ Target = (*registry.Registry)(nil)

// ImportOptions says how to import a bundle.
type ImportOptions struct {
	// Rename gives some of the bundle's tools new names: bundle name → new
	// name. Calls between the bundle's tools follow.
	Rename map[string]string
	// Replace lets a tool replace the tool of the same name here (as its
	// next version); without it, a name already taken refuses the import.
	Replace bool
}

// Imported is one tool an import wrote.
type Imported = adaptbot.Imported

// Import writes the tools of b into target, all or none. Every tool keeps
// its name, or takes the one opts.Rename gives, and goes through the gate
// first: the contract (imports from the allowlist), the tools it calls
// (in the bundle or serving here), at least two examples, then gate (a
// compile in the sandbox and every example). A name already taken needs
// opts.Replace. Any refusal is a *Refused and nothing is written; the
// error is something else for a failure that is not the bundle's (the
// sandbox away, a cancelled context, a disk that fails mid-way, after
// which the tools written are taken back out).
//
// Tools are written with origin imported, callees first; with review on,
// the registry holds each as pending until someone approves it.
func Import(ctx context.Context, b *Bundle, target Target, gate Checker, opts ImportOptions) ([]Imported, error) {
	tools, err := renamed(b, opts.Rename)
	if err != nil {
		return nil, err
	}
	final := map[string]*importTool{}
	for _, t := range tools {
		final[t.name] = t
	}
	for _, t := range tools {
		if _, taken := target.Entry(t.name); taken && !opts.Replace {
			also := ""
			if t.from != "" {
				also = " (renamed from " + t.from + ")"
			}
			return nil, refuse(Collision, t.name, "", "a tool named %s%s exists here already: import with --replace to make the bundle's its next version, or --rename %s=NEW_NAME; nothing was imported", t.name, also, t.bundleName())
		}
		spec, err := contract.Parse(t.name, t.src)
		if err != nil {
			return nil, refuse(Contract, t.name, sourcePath(t.bundleName()), "%s breaks the tool contract, so nothing was imported: %v", t.name, contractProblems(err))
		}
		t.spec = spec
	}
	for _, t := range tools {
		for _, callee := range t.spec.Calls {
			if _, ok := final[callee]; ok {
				continue
			}
			if _, ok := target.Tool(callee); !ok {
				return nil, refuse(Dependency, t.name, "", "%s calls %s, which is neither in the bundle nor serving here; bundle it too (an export brings callees along), then import again; nothing was imported", t.name, callee)
			}
		}
		if n := len(t.examples); n < 2 {
			return nil, refuse(Gate, t.name, examplesPath(t.bundleName()), "%s has %d examples in the bundle; an import runs at least 2 through the gate; nothing was imported", t.name, n)
		}
	}
	for _, t := range tools {
		problems, err := gate.Check(ctx, t.name, t.src, t.examples)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", t.name, err)
		}
		if len(problems) > 0 {
			return nil, refuse(Gate, t.name, "", "%s fails the gate, so nothing was imported:\n- %s", t.name, strings.Join(problems, "\n- "))
		}
	}
	return write(ctx, target, order(tools, final))
}

// importTool is one tool of a bundle on its way in.
type importTool struct {
	name     string // its name here
	from     string // its name in the bundle, when renamed
	src      []byte
	rawEx    []byte
	examples []adaptbot.Example
	entry    registry.Entry
	spec     *contract.Spec
}

func (t *importTool) bundleName() string {
	if t.from != "" {
		return t.from
	}
	return t.name
}

// renamed applies the renames to the bundle's tools: names, package
// clauses and calls between them.
func renamed(b *Bundle, rename map[string]string) ([]*importTool, error) {
	in := map[string]bool{}
	for _, t := range b.Tools {
		in[t.Name] = true
	}
	taken := map[string]string{}
	for from, to := range rename {
		if !in[from] {
			return nil, refuse(Malformed, from, "", "--rename %s=%s: the bundle has no tool %s (it holds %s)", from, to, from, strings.Join(b.Names(), ", "))
		}
		if err := contract.ValidName(to); err != nil {
			return nil, refuse(Malformed, from, "", "--rename %s=%s: %v", from, to, err)
		}
		if err := adaptbot.ReservedName(to); err != nil {
			return nil, refuse(Malformed, from, "", "--rename %s=%s: %v; give it another", from, to, err)
		}
	}
	var out []*importTool
	for _, t := range b.Tools {
		it := &importTool{name: t.Name, src: t.Source, rawEx: t.Examples, entry: t.Entry}
		if to, ok := rename[t.Name]; ok && to != t.Name {
			it.name, it.from = to, t.Name
		}
		if err := adaptbot.ReservedName(it.name); err != nil {
			// A bundle from an AdaptBot that did not reserve the word yet.
			return nil, refuse(Collision, t.Name, "", "the bundle's tool %s cannot keep its name here: %v. Import it under another name: --rename %s=NEW_NAME; nothing was imported", t.Name, err, t.Name)
		}
		if other, dup := taken[it.name]; dup {
			return nil, refuse(Malformed, it.name, "", "%s and %s would both be called %s", other, t.Name, it.name)
		}
		taken[it.name] = t.Name
		if t.Examples != nil {
			if err := json.Unmarshal(t.Examples, &it.examples); err != nil {
				return nil, refuse(Malformed, t.Name, examplesPath(t.Name), "%s is not a JSON array of examples: %v", examplesPath(t.Name), err)
			}
		}
		out = append(out, it)
	}
	for _, it := range out {
		src, err := renameInSource(it.bundleName(), it.name, it.src, rename)
		if err != nil {
			return nil, refuse(Contract, it.name, sourcePath(it.bundleName()), "%s does not parse: %v", sourcePath(it.bundleName()), err)
		}
		it.src = src
	}
	return out, nil
}

// renameInSource gives the tool called from the name to (its package
// clause and the lead of its package comment), and renames the tools it
// calls that rename renames (contract.RenameCalls). Every other byte stays
// as it was.
func renameInSource(from, to string, src []byte, rename map[string]string) ([]byte, error) {
	src, err := contract.RenameCalls(from, src, rename)
	if err != nil || from == to {
		return src, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, from+".go", src, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return nil, err
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	out := slices.Concat(src[:off(f.Name.Pos())], []byte(to), src[off(f.Name.End()):])
	if f.Doc != nil {
		// Before the package clause, so the edit above moved nothing here.
		first := f.Doc.List[0]
		if lead := "// Package " + from; strings.HasPrefix(first.Text, lead) {
			out = slices.Concat(out[:off(first.Pos())], []byte("// Package "+to), out[off(first.Pos())+len(lead):])
		}
	}
	return out, nil
}

// contractProblems lists a contract error's problems on one line each.
func contractProblems(err error) string {
	var ce *contract.Error
	if errors.As(err, &ce) {
		return strings.Join(ce.Problems, "; ")
	}
	return err.Error()
}

// order sorts tools so that every tool comes after the bundle's tools it
// calls (cycles keep their order by name).
func order(tools []*importTool, final map[string]*importTool) []*importTool {
	var out []*importTool
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(t *importTool)
	visit = func(t *importTool) {
		if state[t.name] != 0 {
			return
		}
		state[t.name] = 1
		for _, callee := range t.spec.Calls {
			if c, ok := final[callee]; ok {
				visit(c)
			}
		}
		state[t.name] = 2
		out = append(out, t)
	}
	sorted := append([]*importTool{}, tools...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, t := range sorted {
		visit(t)
	}
	return out
}

// write puts each tool, in order. A failure half-way (a disk, say) takes
// the tools written back out: a new tool is deleted, a replaced one rolled
// back to the version that served before.
func write(ctx context.Context, target Target, tools []*importTool) ([]Imported, error) {
	type written struct {
		name string
		prev int // the version that served before, or 0
	}
	var done []written
	undo := func(cause error) error {
		errs := []error{cause}
		for i := len(done) - 1; i >= 0; i-- {
			ctx := context.WithoutCancel(ctx)
			var err error
			if done[i].prev > 0 {
				_, err = target.Rollback(ctx, done[i].name, done[i].prev)
			} else {
				_, err = target.Delete(ctx, done[i].name)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("taking %s back out: %w", done[i].name, err))
			}
		}
		return errors.Join(errs...)
	}
	out := make([]Imported, 0, len(tools))
	for _, t := range tools {
		before, replaced := target.Entry(t.name)
		e, err := target.Put(ctx, t.name, t.src, registry.PutOptions{Origin: adaptbot.OriginImported, Category: t.entry.Category, Examples: t.rawEx})
		if err != nil {
			return nil, undo(fmt.Errorf("import %s: %w", t.name, err))
		}
		done = append(done, written{name: t.name, prev: before.Version})
		version := e.Version
		if e.Status == registry.Pending {
			version = e.PendingVersion
		}
		out = append(out, Imported{Name: t.name, From: t.from, Version: version, Status: e.Status, Replaced: replaced})
	}
	return out, nil
}
