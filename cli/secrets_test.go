package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"adaptbot"
)

// TestSecretValueComesFromStandardInput: a value is read from standard
// input to its end, its one trailing line break dropped; an empty one is
// refused before it travels, and so is a value given as an argument.
func TestSecretValueComesFromStandardInput(t *testing.T) {
	for in, want := range map[string]string{"s3cr3t-token\n": "s3cr3t-token", "s3cr3t-token\r\n": "s3cr3t-token", "with spaces ": "with spaces "} {
		got, err := readSecret(strings.NewReader(in), nil, "TOKEN")
		if err != nil || got != want {
			t.Errorf("readSecret(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := readSecret(strings.NewReader("\n"), nil, "TOKEN"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty value: %v", err)
	}
	var out, errOut strings.Builder
	err := Run(context.Background(), "secrets", []string{"set", "TOKEN", "s3cr3t-token", "--host", "api.example.com"}, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
	ee, ok := errors.AsType[*ExitError](err)
	if !ok || ee.Code != 2 || !strings.Contains(err.Error(), "never from an argument") || strings.Contains(out.String()+errOut.String(), "s3cr3t-token") {
		t.Errorf("a value as an argument: %v (out %q)", err, out.String()+errOut.String())
	}
}

// TestRunAskerWithYes: with --yes each request is allowed without a
// question, and what was allowed is said on stderr, as the tool wrote it.
func TestRunAskerWithYes(t *testing.T) {
	var errOut strings.Builder
	a := runAsker(strings.NewReader(""), &errOut, true)
	ans, err := a.Ask(context.Background(), adaptbot.Approval{ID: "ap-1", Tool: "post_hook", Version: 2, Method: "POST",
		URL: "https://hooks.example.org/services/{{secret:HOOK}}", Body: `{"text":"hi"}`, Expires: time.Now().Add(time.Minute)})
	if err != nil || ans.Decision != adaptbot.Allow {
		t.Fatalf("--yes: %v, %v", ans, err)
	}
	for _, want := range []string{"post_hook (version 2)", "POST https://hooks.example.org/services/{{secret:HOOK}}", `{"text":"hi"}`, "--yes"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr %q lacks %q", errOut.String(), want)
		}
	}
	if strings.Contains(errOut.String(), "[y/N]") {
		t.Errorf("--yes asked: %q", errOut.String())
	}
	// Without --yes the answer is read: anything but y is a denial.
	for in, want := range map[string]adaptbot.Decision{"y\n": adaptbot.Allow, "yes\n": adaptbot.Allow, "n\n": adaptbot.Deny, "\n": adaptbot.Deny} {
		ans, err := runAsker(strings.NewReader(in), &strings.Builder{}, false).Ask(context.Background(), adaptbot.Approval{Expires: time.Now().Add(time.Minute)})
		if err != nil || ans.Decision != want {
			t.Errorf("answer %q = %v, %v; want %s", in, ans, err, want)
		}
	}
}
