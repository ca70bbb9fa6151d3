package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"adaptbot/contract"
	"adaptbot/llm"
	"adaptbot/registry"
)

// maxSummary caps a tool's description in the classifier's prompt: enough to
// choose by, and it keeps the prompt's size independent of how verbose tool
// authors are. The extraction step sees the whole description.
const maxSummary = 160

// maxOutputInPrompt caps how much tool output the synthesizer sees.
const maxOutputInPrompt = 8000

// historyTurns is how many earlier messages go into prompts.
const historyTurns = 8

const intentSystem = `You sort messages sent to AdaptBot, a chat assistant that can build its own tools.
Answer with the intent:
- BUILD: the user asks to create, change or delete a tool (for example "make a tool that converts roman numerals", "change the calculator to accept commas", "delete the weather tool", "create a tool for that").
- CHAT: anything else, including questions a tool might answer ("what is 2+2", "weather in Paris") and questions about tools.`

var intentFunction = llm.Function{
	Name:        "set_intent",
	Description: "Record the intent of the user's latest message.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"intent":{"type":"string","enum":["CHAT","BUILD"]},"reason":{"type":"string","description":"a few words on why"}},"required":["intent"]}`),
}

// classifierFunction is the classifier's structured answer. decision is
// "general", "need_tool", a tool's name or, in active discovery,
// "request_tools".
func classifierFunction(tools []registry.Tool, discovery bool) llm.Function {
	enum := []string{"general", "need_tool"}
	for _, t := range tools {
		enum = append(enum, t.Name)
	}
	props := map[string]any{
		"decision": map[string]any{"type": "string", "enum": enum, "description": "general, need_tool, or the name of the tool to run"},
		"reason":   map[string]any{"type": "string", "description": "a few words on why"},
	}
	if discovery {
		props["decision"].(map[string]any)["enum"] = append(enum, "request_tools")
		props["tool_request"] = map[string]any{
			"type":        "object",
			"description": "with decision request_tools: the capability you are looking for",
			"properties": map[string]any{
				"domain":    map[string]any{"type": "string", "description": "the area, e.g. finance, weather, files"},
				"operation": map[string]any{"type": "string", "description": "what the tool must do, e.g. convert currency"},
			},
			"required": []string{"domain", "operation"},
		}
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": []string{"decision"}})
	return llm.Function{Name: "route", Description: "Decide how to handle the user's latest message.", Parameters: schema}
}

func classifierSystem(tools []registry.Tool, discoveryLeft int) string {
	var b strings.Builder
	b.WriteString(`You route messages for AdaptBot, a chat assistant that answers with tools when a tool fits.
Decide how to handle the user's latest message:
- "general": answer directly, without a tool (greetings, general knowledge, explanations, opinions).
- the name of one tool below: that tool can produce the answer, and it should run.
- "need_tool": the message needs a capability that no tool below provides (live data, exact computation, an action), and it cannot be answered well without one.
`)
	if discoveryLeft > 0 {
		fmt.Fprintf(&b, `- "request_tools": none of the tools below fits, but a tool for it may exist. Describe the capability in tool_request (domain and operation) and you will be shown more tools. You can do this %d more time(s).
`, discoveryLeft)
	}
	b.WriteString("\nTools:\n")
	if len(tools) == 0 {
		b.WriteString("(none)\n")
	}
	for _, t := range tools {
		b.WriteString(toolLine(t))
	}
	return b.String()
}

func toolLine(t registry.Tool) string {
	cat := ""
	if t.Category != "" {
		cat = " [" + t.Category + "]"
	}
	return fmt.Sprintf("- %s%s: %s\n", t.Name, cat, contract.Summary(t.Description, maxSummary))
}

func discoveryReply(d Discovery, added []registry.Tool) string {
	if len(added) == 0 {
		return fmt.Sprintf("No more tools found for %s: %s. Rephrase the request, or decide with what you have.", d.Domain, d.Operation)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Tools found for %s: %s:\n", d.Domain, d.Operation)
	for _, t := range added {
		b.WriteString(toolLine(t))
	}
	b.WriteString("Decide again.")
	return b.String()
}

func extractSystem(t registry.Tool) string {
	return fmt.Sprintf(`You extract the arguments for the tool %q from the conversation, by calling it.
Tool: %s
Use the values the user gave, or that follow plainly from the conversation. Use the units and formats the parameter descriptions ask for. Leave out optional parameters the user did not mention.`, t.Name, t.Description)
}

func synthSystem() string {
	return `You turn a tool's raw output into a short, friendly answer to the user's question.
Use only what the output says; do not invent or change numbers. Answer in the user's language.`
}

func synthUser(question, tool, output string) string {
	if len(output) > maxOutputInPrompt {
		output = output[:maxOutputInPrompt] + "\n[output truncated]"
	}
	return fmt.Sprintf("Question: %s\n\nTool: %s\nOutput:\n%s", question, tool, output)
}

// conversation is the history (the last few turns) followed by the message.
func conversation(system string, req Request) []llm.Message {
	msgs := []llm.Message{{Role: llm.System, Content: system}}
	h := req.History
	if len(h) > historyTurns {
		h = h[len(h)-historyTurns:]
	}
	for _, m := range h {
		if m.Role == llm.User || m.Role == llm.Assistant {
			msgs = append(msgs, m)
		}
	}
	return append(msgs, llm.Message{Role: llm.User, Content: req.Message})
}
