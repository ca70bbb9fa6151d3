package shipping

import (
	"fmt"

	"adaptbot"
)

// Reason says why a bundle, an import or an export was refused.
type Reason string

// The reasons for a refusal.
const (
	// NotShippable: a tool asked for is missing, broken, pending review or
	// not serving, or cannot be compiled natively.
	NotShippable Reason = "not_shippable"
	// Malformed: not a bundle, or one that breaks the bundle format.
	Malformed Reason = "malformed"
	// UnsafePath: a file's path is absolute, climbs out (..), or is a link.
	UnsafePath Reason = "unsafe_path"
	// Tampered: a file is not what the manifest's SHA-256 says.
	Tampered Reason = "tampered"
	// Contract: a tool breaks the tool contract (a forbidden import, ...).
	Contract Reason = "contract"
	// Gate: a tool fails the rest of the gate (compile, examples).
	Gate Reason = "gate"
	// Dependency: a tool calls a tool that is neither in the bundle nor
	// serving here.
	Dependency Reason = "dependency"
	// Collision: a tool of that name exists and replacing was not asked.
	Collision Reason = "collision"
)

// Refused is a refusal: nothing was written. It names the tool or the
// file it concerns and says what to do.
type Refused struct {
	Reason Reason `json:"reason"`
	// Tool is the tool concerned, if one; Path the file in the bundle.
	Tool string `json:"tool,omitempty"`
	Path string `json:"path,omitempty"`
	Msg  string `json:"error"`
}

func (e *Refused) Error() string { return e.Msg }

// refuse is a refusal, as the *adaptbot.Error every door answers with: the
// bundle's fault is Invalid, a name taken a Conflict, a tool that fails
// its checks Failed; the answer says the reason, the tool and the path.
// errors.AsType[*Refused] finds the refusal in it.
func refuse(reason Reason, tool, path, format string, args ...any) error {
	r := &Refused{Reason: reason, Tool: tool, Path: path, Msg: fmt.Sprintf(format, args...)}
	e := &adaptbot.Error{Kind: adaptbot.Failed, Msg: r.Msg, Err: r, Extra: map[string]any{"reason": r.Reason}}
	switch r.Reason {
	case Malformed, UnsafePath, Tampered:
		e.Kind = adaptbot.Invalid
	case Collision:
		e.Kind = adaptbot.Conflict
	}
	if r.Tool != "" {
		e.Extra["tool"] = r.Tool
	}
	if r.Path != "" {
		e.Extra["path"] = r.Path
	}
	return e
}
