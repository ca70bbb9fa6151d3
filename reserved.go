package adaptbot

import (
	"fmt"
	"strings"
)

// The words a tool may not be named, because the chat, the benchmarks CSV,
// the report or the dashboard use them for themselves: a tool named
// general would run for every general question, and its rows would read
// as answered by the model alone. This is the one list; the packages that
// use each word test that it is here (benchmarks' categories and path
// filter, agent's paths and the classifier's functions).
//
// Names a tool already has keep working where a name is only read (show,
// delete, roll back, export): contract.ValidName refuses none of them.
// What makes or serves a tool (a build, the gate, the registry, an
// import) refuses them with ReservedName.
var (
	// reservedWords are whole names, with why each is taken.
	reservedWords = map[string]string{
		CategoryGeneral:  "the chat's path, and the benchmarks CSV's category, of a question the model answers alone",
		CategoryNeedTool: "the chat's path, the classifier's function and the CSV's category of a message no tool fits",
		"request_tools":  "the classifier's function that asks for more tools",
		PathBuild:        "the chat's path of a build, and the report's and dashboard's filter for every build (--path build)",
	}
	// reservedPrefixes start names taken now or later, with why.
	reservedPrefixes = []struct{ prefix, why string }{
		{CategoryBuildPrefix, "the CSV's categories of work on tools (build_create, build_modify, build_plan, ...) and the classifier's build_tool function start with build_"},
		{CategoryUsersPrefix, "the CSV's categories of changes to the users (users_add, users_role, ...) start with users_"},
	}
)

// ReservedName is nil unless name is a word AdaptBot uses for itself and
// so cannot name a tool: then an Invalid *Error that names the word and
// says why, to which a caller adds what to do.
func ReservedName(name string) error {
	why, ok := reservedWords[name]
	if !ok {
		for _, p := range reservedPrefixes {
			if strings.HasPrefix(name, p.prefix) {
				why, ok = p.why, true
				break
			}
		}
	}
	if !ok {
		return nil
	}
	return &Error{Kind: Invalid, Msg: fmt.Sprintf("the name %q is reserved (%s): no tool can have it", name, why)}
}
