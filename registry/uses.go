package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"adaptbot/contract"
)

// A tool may call other tools (toolkit.Call). The registry knows which:
// the tools a serving version calls are read from its source
// (contract.Calls) and kept by version, so every read of an entry says
// what it uses and what uses it, and no stored field can go stale. A new
// version that calls a tool that does not exist, or that would close a
// cycle, is refused (check). Deleting a tool that others use is refused
// unless forced (Remove); a tool that calls one that is gone reads as
// Broken, with the reason, until the tool is back.

// ErrInUse is matched (errors.Is) by an *InUseError.
var ErrInUse = errors.New("the tool is used by other tools")

// InUseError refuses to delete a tool that other tools use.
type InUseError struct {
	Tool string
	// Dependents are the tools that call Tool, directly or through others,
	// sorted.
	Dependents []string
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("%s is used by %s: change them first, or delete it anyway (force), which leaves them broken", e.Tool, strings.Join(e.Dependents, ", "))
}

// Is makes errors.Is(err, ErrInUse) hold.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }

// usesOf returns the tools rec's serving version calls, from the cache of
// what each version calls.
func (r *Registry) usesOf(rec *record) []string {
	if rec == nil || rec.code == nil {
		return nil
	}
	key := rec.entry.Name + "\x00" + rec.entry.SHA256
	if v, ok := r.calls.Load(key); ok {
		return v.([]string)
	}
	uses, _ := contract.Calls(rec.entry.Name, rec.code) // what it names, even where it breaks the rules
	r.calls.Store(key, uses)
	return uses
}

// annotateLocked fills the derived fields of entries: Uses, UsedBy, and,
// for a serving tool that calls a tool that does not serve (deleted, or
// never there), Status Broken with the reason. The caller holds r.mu.
func (r *Registry) annotateLocked(entries []Entry) {
	uses := make(map[string][]string, len(r.tools))
	usedBy := map[string][]string{}
	for name, rec := range r.tools {
		u := r.usesOf(rec)
		uses[name] = u
		for _, callee := range u {
			usedBy[callee] = append(usedBy[callee], name)
		}
	}
	for i := range entries {
		e := &entries[i]
		e.Uses = slices.Clone(uses[e.Name])
		e.UsedBy = slices.Sorted(slices.Values(usedBy[e.Name]))
		if msg := r.reservedProblem(e.Name); msg != "" {
			e.Status, e.LastError = Broken, msg
			continue
		}
		if e.Status != OK {
			continue
		}
		for _, callee := range e.Uses {
			if !r.servingLocked(callee) {
				e.Status = Broken
				e.LastError = fmt.Sprintf("calls %s, which is not a tool (any more): its calls of it fail. Bring %s back (a rollback restores a deleted tool) or change %s.", callee, callee, e.Name)
				break
			}
		}
	}
}

// servingLocked reports whether a call of name would find a tool: one of
// the registry's that serves, or one Options.Known knows. The caller holds
// r.mu.
func (r *Registry) servingLocked(name string) bool {
	if rec := r.tools[name]; rec != nil && rec.serves() {
		return true
	}
	return r.opts.Known != nil && r.opts.Known(name)
}

// Dependents returns the tools that call name, directly or through other
// tools, sorted.
func (r *Registry) Dependents(name string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.dependentsLocked(name)
}

func (r *Registry) dependentsLocked(name string) []string {
	usedBy := map[string][]string{}
	for n, rec := range r.tools {
		for _, callee := range r.usesOf(rec) {
			usedBy[callee] = append(usedBy[callee], n)
		}
	}
	seen := map[string]bool{name: true}
	queue := []string{name}
	var out []string
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, d := range usedBy[next] {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
				queue = append(queue, d)
			}
		}
	}
	sort.Strings(out)
	return out
}

// chainLocked returns a chain of calls from tool from to tool to through
// the serving versions ("a", "b", "c"), or nil if there is none. The caller
// holds r.mu.
func (r *Registry) chainLocked(from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == to {
			var chain []string
			for ; n != ""; n = prev[n] {
				chain = append(chain, n)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, callee := range r.usesOf(r.tools[n]) {
			if _, ok := prev[callee]; !ok {
				prev[callee] = n
				queue = append(queue, callee)
			}
		}
	}
	return nil
}

// checkCallees refuses a version, which passed the contract as spec (so
// its calls keep the rules of contract.Calls), that calls a tool that is
// not there or would close a cycle. A tool is there if one of the
// registry's serves, its file waits in the tools folder (the tools of a
// folder are loaded one by one), or Options.Known knows it. The caller
// holds r.write.
func (r *Registry) checkCallees(spec *contract.Spec, src []byte) error {
	name, uses := spec.Name, spec.Calls
	if len(uses) == 0 {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	problems := contract.MissingCallees(name, src, func(tool string) bool {
		if r.servingLocked(tool) {
			return true
		}
		_, err := os.Stat(r.SourcePath(tool))
		return contract.ValidName(tool) == nil && err == nil
	})
	for _, callee := range uses {
		if chain := r.chainLocked(callee, name); chain != nil {
			problems = append(problems, fmt.Sprintf("calls %s, which calls %s back (%s → %s): a cycle; a tool may not call a tool that uses it", callee, name, name, strings.Join(chain, " → ")))
		}
	}
	if len(problems) > 0 {
		return &contract.Error{Tool: name, Problems: problems}
	}
	return nil
}

// Remove deletes the tool as Delete does, unless other tools use it: then
// it refuses with an *InUseError naming them, or, with force, deletes it
// anyway and returns them; they read as Broken, with the reason, until the
// tool is back.
func (r *Registry) Remove(ctx context.Context, name string, force bool) (Entry, []string, error) {
	if err := contract.ValidName(name); err != nil {
		return Entry{}, nil, err
	}
	if r.opts.ReadOnly {
		return Entry{}, nil, ErrReadOnly
	}
	r.write.Lock()
	defer r.write.Unlock()
	deps := r.Dependents(name)
	if len(deps) > 0 && !force {
		return Entry{}, deps, &InUseError{Tool: name, Dependents: deps}
	}
	e, err := r.deleteLocked(name)
	if err == nil && len(deps) > 0 {
		r.opts.Log.Warn("tool deleted although others use it; they are broken until it is back", "tool", name, "dependents", deps)
	}
	return e, deps, err
}

// SetWarning records (or, empty, clears) the warning shown on name's entry:
// what the last check of the tools it works with found. It announces no
// change: what serves is the same.
func (r *Registry) SetWarning(name, warning string) error {
	if r.opts.ReadOnly {
		return ErrReadOnly
	}
	r.write.Lock()
	defer r.write.Unlock()
	r.mu.Lock()
	rec, ok := r.tools[name]
	if ok {
		if rec.entry.Warning == warning {
			r.mu.Unlock()
			return nil
		}
		rec.entry.Warning = warning
	}
	r.mu.Unlock()
	if !ok {
		return NotFound(name)
	}
	return r.saveLocked()
}

// Review reports whether new versions wait for approval (Options.Review).
func (r *Registry) Review() bool { return r.opts.Review }
