package main

import (
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/homelock"
)

// TestLocalCommandsWithoutServerOnlyRead: with no server answering, the
// commands that fall back on the folder (tools show, history, test and
// list, report, users list) open its state read-only: they take no lock,
// so they answer beside a server still starting (which holds the folder),
// and they leave every file as it was. Changes refuse, saying to start the
// server (TestNoServer).
func TestLocalCommandsWithoutServerOnlyRead(t *testing.T) {
	in := start(t, nil, func(dir string) {
		copyFile(t, filepath.Join("..", "tools", "calculator", "examples.json"), filepath.Join(dir, "tools", "calculator", "examples.json"))
	})
	if code, body := in.do(t, "POST", "/api/tools/calculator/run", `{"expression": "1+2"}`); code != 200 {
		t.Fatalf("run = %d %v", code, body)
	}
	in.stop()
	env := map[string]string{}
	for k, v := range in.env {
		env[k] = v
	}
	env["ADAPTBOT_ADDR"] = closedAddr(t)

	starting, err := homelock.Acquire(in.dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer starting.Release()
	before := tree(t, in.dir)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tools", "show", "calculator"}, "calculator, version 1"},
		{[]string{"tools", "history", "calculator"}, "VERSION"},
		{[]string{"tools", "test", "calculator"}, "examples pass"},
		{[]string{"tools", "list", "--server", "local"}, "calculator"},
		{[]string{"report"}, "calculator"},
		{[]string{"report", "--format", "csv"}, "1+2"},
		{[]string{"users", "list"}, "No users yet"},
	} {
		out, err := runEnv(t, env, strings.NewReader(""), c.args...)
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("%v beside a server still starting: %v; want %q in\n%s", c.args, err, c.want, out)
		}
	}
	after := tree(t, in.dir)
	if !equalTrees(before, after) {
		for p := range after {
			if _, ok := before[p]; !ok {
				t.Errorf("written: %s", must(filepath.Rel(in.dir, p)))
			}
		}
		for p, data := range before {
			if string(after[p]) != string(data) {
				t.Errorf("changed or removed: %s", must(filepath.Rel(in.dir, p)))
			}
		}
	}
}

func must[T any](v T, _ error) T { return v }
