package generator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"adaptbot"
	"adaptbot/registry"
)

// webhook posts a message to a webhook whose address holds a secret, and
// says how many messages the channel now has.
const webhook = `// Package webhook posts a message to the team's channel.
package webhook

import (
	"context"
	"encoding/json"
	"fmt"

	"adaptbot/toolkit"
)

const Hosts = "hooks.example.org"

// Input is the message.
type Input struct {
	Text string ` + "`json:\"text\"`" + `
}

// Execute posts it.
func Execute(ctx context.Context, in Input) (string, error) {
	resp, err := toolkit.PostJSON(ctx, "https://hooks.example.org/services/{{secret:HOOK}}", nil, map[string]string{"text": in.Text})
	if err != nil {
		return "", err
	}
	var out struct {
		Count int ` + "`json:\"count\"`" + `
	}
	if err := json.Unmarshal([]byte(resp.Body), &out); err != nil {
		return "", fmt.Errorf("the hook's answer: %w", err)
	}
	return fmt.Sprintf("posted %q; the channel has %d messages", in.Text, out.Count), nil
}
`

func hookExample(text string, count int) Example {
	return Example{
		Input:    json.RawMessage(`{"text":"` + text + `"}`),
		Contains: "posted",
		HTTP: []adaptbot.Exchange{{
			Request:  adaptbot.ExchangeRequest{Method: "POST", URL: "https://hooks.example.org/services/{{secret:HOOK}}", Body: `{"text": "` + text + `"}`},
			Response: adaptbot.ExchangeResponse{Status: 200, Headers: map[string]string{"content-type": "application/json"}, Body: fmt.Sprintf(`{"ok":true,"count":%d}`, count)},
		}},
	}
}

// TestGateAnswersFromExchanges: a tool that acts passes the gate with no
// network (the sandbox's default policy refuses everything here) and no
// secret's value, its requests answered by its examples' exchanges; it
// fails when it sends a request that is not listed, or leaves one out.
func TestGateAnswersFromExchanges(t *testing.T) {
	f := newFixture(t, nil)
	src := webhook
	good := []Example{hookExample("deploy done", 3), hookExample("rollback", 4)}
	problems, err := f.gen.Check(t.Context(), "webhook", []byte(src), good)
	if err != nil || len(problems) > 0 {
		t.Fatalf("problems %q, %v", problems, err)
	}

	// The example expects another body: the request is not listed, and the
	// listed one is left out.
	wrong := []Example{hookExample("deploy done", 3), hookExample("rollback", 4)}
	wrong[1].HTTP[0].Request.Body = `{"text":"something else"}`
	problems, err = f.gen.Check(t.Context(), "webhook", []byte(src), wrong)
	if err != nil || len(problems) != 1 {
		t.Fatalf("problems %q, %v", problems, err)
	}
	for _, want := range []string{
		`example 2 of 2`,
		`the tool sent POST https://hooks.example.org/services/{{secret:HOOK}} with body "{\"text\":\"rollback\"}", which none of the example's http exchanges lists`,
		`the tool did not send POST https://hooks.example.org/services/{{secret:HOOK}} with body "{\"text\":\"something else\"}", which the example's http exchange 1 expects`,
	} {
		if !strings.Contains(problems[0], want) {
			t.Errorf("problem %q\ndoes not say %q", problems[0], want)
		}
	}

	// An example with no exchanges of a tool that acts: its request is
	// refused, never sent.
	none := []Example{hookExample("deploy done", 3), {Input: json.RawMessage(`{"text":"x"}`), Contains: "posted"}}
	problems, _ = f.gen.Check(t.Context(), "webhook", []byte(src), none)
	if len(problems) != 1 || !strings.Contains(problems[0], "which none of the example's http exchanges lists") {
		t.Errorf("problems %q", problems)
	}

	// An extra exchange the tool never sends fails the example even though
	// its output matches.
	extra := []Example{hookExample("deploy done", 3), hookExample("rollback", 4)}
	extra[0].HTTP = append(extra[0].HTTP, adaptbot.Exchange{Request: adaptbot.ExchangeRequest{URL: "https://hooks.example.org/status"}})
	problems, _ = f.gen.Check(t.Context(), "webhook", []byte(src), extra)
	if len(problems) != 1 || !strings.Contains(problems[0], "the tool did not send GET https://hooks.example.org/status") {
		t.Errorf("problems %q", problems)
	}
}

// TestToolsTestAnswersFromExchanges: `tools test` holds a stored tool to
// its examples' exchanges too.
func TestToolsTestAnswersFromExchanges(t *testing.T) {
	f := newFixture(t, nil)
	src := webhook
	if _, err := f.reg.Put(t.Context(), "webhook", []byte(src), registry.PutOptions{Origin: adaptbot.OriginGenerated,
		Examples: encodeExamples([]Example{hookExample("deploy done", 3), hookExample("rollback", 4)})}); err != nil {
		t.Fatal(err)
	}
	rep, err := f.gen.TestTool(t.Context(), "webhook")
	if err != nil || !rep.OK {
		t.Fatalf("report %+v, %v", rep, err)
	}
	if out := rep.Results[0].Output; out != `posted "deploy done"; the channel has 3 messages` {
		t.Errorf("output %q", out)
	}
	raw := f.reg.Examples("webhook")
	if !strings.Contains(string(raw), `"http": [`) || !strings.Contains(string(raw), `"{{secret:HOOK}}`[1:]) {
		t.Errorf("stored examples lost their exchanges:\n%s", raw)
	}
}

// A tool that sends anything but GET without declaring its hosts breaks
// the contract before anything runs.
func TestGateWantsHostsOfAToolThatActs(t *testing.T) {
	f := newFixture(t, nil)
	src := strings.Replace(webhook, "const Hosts = \"hooks.example.org\"\n", "", 1)
	problems, err := f.gen.Check(t.Context(), "webhook", []byte(src), []Example{hookExample("a", 1), hookExample("b", 2)})
	if err != nil || len(problems) == 0 || !strings.Contains(problems[0], "toolkit.PostJSON sends a POST: a tool that sends anything but GET or HEAD must declare the hosts it reaches") {
		t.Errorf("problems %q, %v", problems, err)
	}
}
