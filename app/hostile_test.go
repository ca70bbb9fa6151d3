package main

import (
	"encoding/json"
	"strings"
	"testing"

	"adaptbot"
	"adaptbot/poll"
	"adaptbot/sandbox"
	"adaptbot/sandbox/sandboxtest"
)

// TestHostileToolsCannotTakeTheServerDown drops every tool of the sandbox's
// hostile corpus into a running server, as a person (or a model) might, and
// runs each. Each must fail the way the corpus says, and afterwards the
// server must still answer /healthz with a full worker pool and run a normal
// tool.
func TestHostileToolsCannotTakeTheServerDown(t *testing.T) {
	if testing.Short() {
		t.Skip("the hostile corpus takes a while")
	}
	cases, err := sandboxtest.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	redirect, stop, err := sandboxtest.Redirector()
	if err != nil {
		t.Fatalf("redirector: %v", err)
	}
	defer stop()
	in := startWith(t, map[string]string{
		// Room for the crash cases to crash before the time limit: under
		// -race on a loaded machine, recursing to the stack limit took
		// over 4s. The cases that must time out declare a second of their
		// own (below), so the long limit costs nothing.
		"ADAPTBOT_TOOL_TIMEOUT": "20s",
		"ADAPTBOT_EGRESS_ALLOW": redirect.Policy.AllowNets[0].String(),
	}, testHooks(redirect.Rewrite))

	for _, c := range cases {
		src := string(c.Source)
		if c.Kind == adaptbot.FailTimeout {
			src += "\n// Timeout is this case's own call limit.\nconst Timeout = \"1s\"\n"
		}
		writeTool(t, in.dir, c.Name, src)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			var entry map[string]any
			poll.Until(t, c.Name+" to be checked", func() bool {
				code, r := in.do(t, "GET", "/api/tools/"+c.Name, "")
				entry = r
				return code == 200
			})
			if entry["status"] == "broken" {
				// Refused before it could run: at the contract or while
				// compiling in the sandbox (an init that never ends).
				if c.Kind != adaptbot.FailCompile && c.Kind != adaptbot.FailTimeout {
					t.Fatalf("refused at load, but the corpus expects %s: %v", c.Kind, entry["last_error"])
				}
				if !strings.Contains(str(entry["last_error"]), c.Message) {
					t.Errorf("last_error %q does not say %q", entry["last_error"], c.Message)
				}
				return
			}
			code, r := in.do(t, "POST", "/api/tools/"+c.Name+"/run", `{}`)
			if c.Kind == "" {
				if code != 200 || !strings.Contains(str(r["output"]), c.Output) {
					t.Errorf("run = %d %v, want output %q", code, r, c.Output)
				}
				return
			}
			if code != 422 || r["kind"] != string(c.Kind) || !strings.Contains(str(r["error"]), c.Message) || !strings.Contains(str(r["error"]), c.Name) {
				t.Errorf("run = %d %v, want kind %s saying %q", code, r, c.Kind, c.Message)
			}
		})
	}

	code, h := in.do(t, "GET", "/healthz", "")
	if code != 200 || (h["status"] != "ok" && h["status"] != "degraded") {
		t.Fatalf("/healthz after the corpus = %d %v", code, h)
	}
	poll.Until(t, "the pool to be back at its size", func() bool {
		_, h := in.do(t, "GET", "/healthz", "")
		var st sandbox.Stats
		b, _ := json.Marshal(h["sandbox"])
		json.Unmarshal(b, &st)
		return st.Size == 2 && st.Live+st.Starting == st.Size && h["status"] == "ok"
	})
	if _, err := sandbox.LandlockABI(); err == nil {
		_, h := in.do(t, "GET", "/healthz", "")
		if sb, _ := h["sandbox"].(map[string]any); sb["confined"] != true {
			t.Errorf("/healthz: workers not confined on a kernel with Landlock: %v", sb)
		}
	}
	if code, r := in.do(t, "POST", "/api/tools/calculator/run", `{"expression": "6*7"}`); code != 200 || !strings.Contains(str(r["output"]), "42") {
		t.Errorf("a normal call after the corpus = %d %v", code, r)
	}
}
