package agent

import (
	"testing"

	"adaptbot"
)

// TestPathsAndFunctionsAreReserved: no tool can take the name of a path
// the chat reports, or of a function the classifier offers beside the
// tools, so a tool never answers for the model or stands in for one of its
// choices.
func TestPathsAndFunctionsAreReserved(t *testing.T) {
	for _, name := range []string{PathGeneral, PathNeedTool, PathBuild, fnRequestTools, fnBuild, fnNeedTool} {
		if adaptbot.ReservedName(name) == nil {
			t.Errorf("%q is the chat's own, but adaptbot.ReservedName lets a tool take it", name)
		}
	}
}
