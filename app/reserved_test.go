package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// reservedScript is a model that names the tool the words ask for: "named
// general" gives general, "named need tool" need_tool.
func reservedScript(r llmtest.Request) llmtest.Reply {
	name := "general"
	if strings.Contains(r.LastUser(), "need tool") {
		name = "need_tool"
	}
	if isClassifier(r) {
		if strings.HasPrefix(r.LastUser(), "make a tool") {
			return llmtest.Call("build_tool", `{"action":"create","tool":"`+name+`","summary":"Answers anything."}`)
		}
		return llmtest.Say("ok")
	}
	if f := r.Forced(); f == "decide_build" {
		return llmtest.Call(f, `{"op":"CREATE","tool":"`+name+`","summary":"Answers anything.","inputs":["question"]}`)
	}
	return llmtest.Say("ok")
}

// TestReservedNamesOnEveryDoor: a name the chat or the CSV uses for itself
// is refused, with the word and why, wherever a tool's name comes in: a
// chat's build, tools create, a plan, an import's --rename, a tool dropped
// in by hand. The one by hand stays listed, broken, says how to rename it
// (the registry's test sees the log's warning), never runs, and can be
// deleted.
func TestReservedNamesOnEveryDoor(t *testing.T) {
	in := start(t, modelEnv(llmtest.New(t, reservedScript)))
	env := cliEnv(in.dir, serverAddr(t, in))

	// A chat's build.
	code, r := in.chat(t, "make a tool named general that answers anything")
	build, _ := r["tool_build"].(map[string]any)
	if code != 200 || build["ok"] != false || !strings.Contains(build["error"].(string), `the name "general" is reserved`) {
		t.Errorf("a chat's build of general = %d %v", code, r)
	}
	// tools create.
	code2, stderr := runExit(t, env, "tools", "create", "a tool named need tool that needs tools")
	if code2 != 1 || !strings.Contains(stderr, `the name "need_tool" is reserved`) {
		t.Errorf("tools create of need_tool: exit %d\n%s", code2, stderr)
	}
	// A plan.
	if code, r := in.do(t, "POST", "/api/tools/plan", `{"request": "make a tool named general"}`); code != 400 || !strings.Contains(r["error"].(string), `the name "general" is reserved`) {
		t.Errorf("a plan of general = %d %v", code, r)
	}
	// An import's --rename.
	examples, err := os.ReadFile(filepath.Join("..", "tools", "calculator", "examples.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(in.dir, "tools", "calculator", "examples.json"), examples, 0o644)
	bundle := filepath.Join(t.TempDir(), "calc.tar.gz")
	if code, stderr := runExit(t, env, "tools", "export", "calculator", "--bundle", bundle); code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	checkBadValue(t, env, badValue{[]string{"tools", "import", bundle, "--rename", "calculator=build_calc"}, `--rename calculator=build_calc: the name "build_calc" is reserved`, 2})
	for _, name := range []string{"general", "need_tool", "build_calc"} {
		if _, err := os.Stat(filepath.Join(in.dir, "tools", name)); !os.IsNotExist(err) {
			t.Errorf("tools/%s exists after its refusal: %v", name, err)
		}
	}

	// By hand.
	src := strings.ReplaceAll(echoTool, "echo_tool", "general")
	writeTool(t, in.dir, "general", strings.Replace(src, "%d", "1", 1))
	poll.Until(t, "general to be listed", func() bool { code, _ := in.do(t, "GET", "/api/tools/general", ""); return code == 200 })
	_, e := in.do(t, "GET", "/api/tools/general", "")
	if e["status"] != "broken" || !strings.Contains(e["last_error"].(string), "Rename it") {
		t.Errorf("general dropped in by hand: %v", e)
	}
	if code, r := in.do(t, "POST", "/api/tools/general/run", `{"text": "hi"}`); code == 200 {
		t.Errorf("general ran: %v", r)
	}
	// The chat still answers a general question itself.
	if code, r := in.chat(t, "hello there"); code != 200 || r["path"] != "general" || len(r["tools"].([]any)) != 0 {
		t.Errorf("a general question = %d %v", code, r)
	}
	if code, stderr := runExit(t, env, "tools", "delete", "general", "--yes"); code != 0 {
		t.Errorf("tools delete general: exit %d %s", code, stderr)
	}
	if code, _ := in.do(t, "GET", "/api/tools/general", ""); code != 404 {
		t.Errorf("general after its delete: %d", code)
	}
}
