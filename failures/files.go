package failures

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"adaptbot/atomicfile"
	"adaptbot/contract"
)

// Files keeps each tool's state as one JSON file, <Dir>/<tool>.json, written
// atomically. The server is its one writer.
type Files struct {
	Dir string
	mu  sync.Mutex
}

var _ Backend = (*Files)(nil)

// Load reads every tool's file. A file that does not parse is moved aside
// (<tool>.json.corrupt) and reported, not lost.
func (f *Files) Load(ctx context.Context) (map[string]State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]State{}
	entries, err := os.ReadDir(f.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failures: %w", err)
	}
	var bad []error
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || contract.ValidName(name) != nil {
			continue
		}
		st, err := f.read(name)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out[name] = st
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("failures: %w", errors.Join(bad...))
	}
	return out, nil
}

// Update reads the tool's file, applies change and writes the result.
func (f *Files) Update(ctx context.Context, tool string, change func(State) State) (State, error) {
	if err := contract.ValidName(tool); err != nil {
		return State{}, fmt.Errorf("failures: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, err := f.read(tool)
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, errCorrupt) {
		return State{}, err
	}
	next := change(cur)
	b, err := json.Marshal(next)
	if err != nil {
		return State{}, fmt.Errorf("failures: %w", err)
	}
	if err := atomicfile.Write(f.path(tool), append(b, '\n'), 0o600); err != nil {
		return State{}, fmt.Errorf("failures: %w", err)
	}
	return next, nil
}

// errCorrupt marks a file that did not parse and was moved aside.
var errCorrupt = errors.New("corrupt failure cases")

func (f *Files) path(tool string) string { return filepath.Join(f.Dir, tool+".json") }

// read returns a tool's state from its file; a file that does not parse is
// moved aside.
func (f *Files) read(tool string) (State, error) {
	b, err := os.ReadFile(f.path(tool))
	if err != nil {
		return State{Tool: tool}, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		aside := f.path(tool) + ".corrupt"
		os.Rename(f.path(tool), aside) //nolint:errcheck // reported below either way
		return State{Tool: tool}, fmt.Errorf("%w: %s did not parse (moved to %s): %v", errCorrupt, f.path(tool), aside, err)
	}
	st.Tool = tool
	return st, nil
}
