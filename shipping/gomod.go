package shipping

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strings"

	"adaptbot"
)

// sdkModules are the modules an exported server builds from: the MCP SDK,
// the JSON schema validator, and what their packages import. Each is
// required at the version AdaptBot itself is built with (from its go.mod),
// and its go.sum lines are AdaptBot's, so an export builds from the same
// module cache, offline, with nothing to resolve. The export test
// (TestExportedModuleBuildsAndServes) fails when this list falls behind a
// new SDK.
var sdkModules = []string{
	"github.com/google/jsonschema-go",
	"github.com/modelcontextprotocol/go-sdk",
	"github.com/segmentio/asm",
	"github.com/segmentio/encoding",
	"github.com/yosida95/uritemplate/v3",
	"golang.org/x/oauth2",
	"golang.org/x/sync",
	"golang.org/x/sys",
	"golang.org/x/time",
}

// direct are the modules an exported module imports itself.
var direct = map[string]bool{"github.com/google/jsonschema-go": true, "github.com/modelcontextprotocol/go-sdk": true}

// goMod is AdaptBot's go.mod as the export needs it.
type goMod struct {
	goVersion string
	versions  map[string]string // module path → version
}

// readGoMod reads the go directive and the required versions of a go.mod.
func readGoMod(data []byte) (goMod, error) {
	m := goMod{versions: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	inBlock := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case inBlock && f[0] == ")":
			inBlock = false
		case inBlock && len(f) == 2:
			m.versions[f[0]] = f[1]
		case f[0] == "go" && len(f) == 2:
			m.goVersion = f[1]
		case f[0] == "require" && len(f) == 2 && f[1] == "(":
			inBlock = true
		case f[0] == "require" && len(f) == 3:
			m.versions[f[1]] = f[2]
		}
	}
	if m.goVersion == "" {
		return m, fmt.Errorf("go.mod has no go directive")
	}
	return m, sc.Err()
}

// goModFiles returns the go.mod and go.sum of an exported module called
// path, from AdaptBot's own: m, its go.mod as read, and its go.sum.
func goModFiles(path string, m goMod) (gomod, gosum []byte, err error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "module %s\n\ngo %s\n", path, m.goVersion)
	for _, indirect := range []bool{false, true} {
		b.WriteString("\nrequire (\n")
		for _, mod := range sdkModules {
			if direct[mod] == indirect {
				continue
			}
			v, ok := m.versions[mod]
			if !ok {
				return nil, nil, fmt.Errorf("AdaptBot's go.mod does not require %s; the export cannot pin it", mod)
			}
			comment := ""
			if indirect {
				comment = " // indirect"
			}
			fmt.Fprintf(&b, "\t%s %s%s\n", mod, v, comment)
		}
		b.WriteString(")\n")
	}
	gomod = b.Bytes()

	want := map[string]bool{}
	for _, mod := range sdkModules {
		want[mod+" "+m.versions[mod]] = true
	}
	var sums []string
	sc := bufio.NewScanner(bytes.NewReader(adaptbot.GoSum))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && want[f[0]+" "+strings.TrimSuffix(f[1], "/go.mod")] {
			sums = append(sums, sc.Text())
		}
	}
	if len(sums) < 2*len(sdkModules) {
		return nil, nil, fmt.Errorf("AdaptBot's go.sum lacks some of %s", strings.Join(sdkModules, ", "))
	}
	sort.Strings(sums)
	return gomod, []byte(strings.Join(sums, "\n") + "\n"), nil
}
