package registry

import (
	"fmt"
	"path"

	"adaptbot"
)

// A tool whose name AdaptBot keeps for itself (adaptbot.ReservedName: a
// tool named general would answer every general question, and its rows
// would read as the model's) is never served. A new version of one is
// refused (check). One dropped into tools/ by hand, or kept from before
// the word was reserved, stays listed as Broken, with a warning that says
// how to rename it, so that a person sees it and can delete or rename it;
// its file is left as it is.

// reservedProblem is what a tool named name is told when the name is
// reserved, with how to rename it, or "" when it is not.
func (r *Registry) reservedProblem(name string) string {
	err := adaptbot.ReservedName(name)
	if err == nil {
		return ""
	}
	dir := path.Dir(path.Dir(r.relSource(name))) // tools, as the registry file sees it
	return fmt.Sprintf("%v, so this tool is not served. Rename it: move %s to %s/NEW_NAME/NEW_NAME.go and make its package clause package NEW_NAME; or delete it (adaptbot tools delete %s). Its file is left as it is",
		err, r.relSource(name), dir, name)
}

// reservedLocked records name's tool, whose name is reserved (msg says so),
// as listed but Broken, serving nothing, and warns. It returns the event
// when the entry changed. The caller holds r.write.
func (r *Registry) reservedLocked(name string, rec *record, msg string) *Event {
	r.warn("tool %s: %s", name, msg)
	now := r.opts.Now().UTC()
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec == nil {
		rec = &record{entry: Entry{Tool: adaptbot.Tool{Name: name, Origin: adaptbot.OriginManual}, Source: r.relSource(name), CreatedAt: now}}
		r.tools[name] = rec
	}
	if rec.entry.Status == Broken && rec.entry.LastError == msg {
		return nil
	}
	rec.entry.Status, rec.entry.LastError, rec.entry.UpdatedAt = Broken, msg, now
	return &Event{Kind: Failed, Entry: rec.entry}
}
