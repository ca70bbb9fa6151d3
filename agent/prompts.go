package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"adaptbot/clip"
	"adaptbot/contract"
	"adaptbot/llm"
	"adaptbot/toolbox"
)

// maxDescription caps a tool's description in the functions offered to the
// model: enough to choose by and fill the arguments, and it keeps the
// prompt's size independent of how verbose tool authors are.
const maxDescription = 300

// maxSummary caps a tool's description in a discovery reply.
const maxSummary = 160

// maxOutputInPrompt caps how much of one tool's output the synthesizer sees.
const maxOutputInPrompt = 8000

// historyTurns is how many earlier messages go into prompts.
const historyTurns = 8

// The classifier's functions besides the tools.
const (
	fnRequestTools = "request_tools"
	fnBuild        = "build_tool"
	fnNeedTool     = "need_tool"
)

var (
	requestToolsFunction = llm.Function{
		Name:        fnRequestTools,
		Description: "No tool offered fits, but one may exist: describe it and more tools are offered.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"domain":{"type":"string","description":"e.g. finance, weather, files"},"operation":{"type":"string","description":"what it must do, e.g. convert currency"}},"required":["domain","operation"]}`),
	}
	buildFunction = llm.Function{
		Name:        fnBuild,
		Description: "The user asks to create, change or delete a tool (\"make a tool that converts roman numerals\", \"delete the weather tool\").",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"action":{"type":"string","enum":["create","modify","delete"]},"tool":{"type":"string","description":"snake_case name, the existing one's to modify or delete"},"summary":{"type":"string","description":"what the tool must do, or the change, in one sentence"}},"required":["action","tool","summary"]}`),
	}
	needToolFunction = llm.Function{
		Name:        fnNeedTool,
		Description: "The message needs what no tool offered provides (live data, exact computation, an action) to be answered well.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"capability":{"type":"string","description":"what is missing, in a few words"}}}`),
	}
)

// toolFunction offers a tool to the model with its real schema, under a
// name providers accept; a local tool's schema gets DirectFlag, unless the
// tool opted out.
func toolFunction(t toolbox.Tool) llm.Function {
	spec := t.Spec()
	params := spec.Parameters
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if !spec.Remote() && !spec.NoDirect {
		params, _ = withFlag(params)
	}
	return llm.Function{Name: toolbox.FunctionName(spec.Name), Description: describe(spec.Description), Parameters: params}
}

// describe is a tool's description for the model: its first sentence, or
// its first maxDescription characters, on one line (contract.Summary). The
// parameters' own descriptions in the schema carry the rest the model needs
// to fill the arguments, and the prompt stays the same size however
// verbose tool authors are.
func describe(desc string) string {
	if len(desc) > 4*maxDescription {
		desc = strings.ToValidUTF8(desc[:4*maxDescription], "") // Summary cuts there anyway; spare it the work
	}
	return contract.Summary(desc, maxDescription)
}

// offer adds tools to the functions offered this message, and records
// under which function name each is offered: calls are decoded by that
// map, since encoded names do not decode ("a/b" and "a__b" encode alike).
// A tool already offered is not offered again. A name that is taken, by
// another tool or by one of the classifier's own functions, gets a
// numbered suffix.
func (s *state) offer(tools []toolbox.Tool) {
	if s.offered == nil {
		s.offered = map[string]string{}
	}
	offered := make(map[string]bool, len(s.offered))
	for _, name := range s.offered {
		offered[name] = true
	}
	for _, t := range tools {
		name := t.Spec().Name
		if offered[name] {
			continue
		}
		f := toolFunction(t)
		base := f.Name
		for i := 2; s.taken(f.Name); i++ {
			suffix := fmt.Sprintf("_%d", i)
			f.Name = base[:min(len(base), toolbox.MaxFunctionName-len(suffix))] + suffix
		}
		s.offered[f.Name] = name
		offered[name] = true
		s.functions = append(s.functions, f)
	}
}

// taken reports whether a function name is in use this message.
func (s *state) taken(function string) bool {
	switch function {
	case fnRequestTools, fnBuild, fnNeedTool:
		return true
	}
	_, ok := s.offered[function]
	return ok
}

// offers are the functions every model call of this message offers: the
// agent's own three first, which never change, then the tools in the order
// they were offered (the shortlist, then what discovery added), so the list
// only ever grows at its end and each call's prompt begins as the last one's
// did. request_tools stays offered once discovery is spent (a call of it
// then counts as "no tool fits"), for the same reason.
func (s *state) offers() []llm.Function {
	return append([]llm.Function{buildFunction, needToolFunction, requestToolsFunction}, s.functions...)
}

// systemPrompt is the one system prompt of every model call of a chat: what
// to do with a message, and with the tools' results once they arrive.
const systemPrompt = `You are AdaptBot, a concise assistant with tools. For the user's latest message:
- answer in plain text when no tool is needed (greetings, general knowledge, explanations);
- or call the tools that give the answer, with arguments in the units and formats their parameters ask for (several at once only if independent);
- or call ` + fnBuild + `, ` + fnNeedTool + ` or ` + fnRequestTools + `, as their descriptions say.
Set ` + DirectFlag + `: true on a call whose output, shown as it is, answers the message (a calculation, a conversion); leave it out if you must explain the output.
Answer from the tools' results only, never inventing or changing numbers, short and in the user's language. If another step is needed, call its tool.`

func toolLine(t toolbox.Tool) string {
	spec := t.Spec()
	domain := ""
	if spec.Category != "" {
		domain = " [" + spec.Category + "]"
	}
	return fmt.Sprintf("- %s%s: %s\n", spec.Name, domain, contract.Summary(spec.Description, maxSummary))
}

func discoveryReply(d Discovery, added []toolbox.Tool) string {
	if len(added) == 0 {
		return fmt.Sprintf("No more tools found for %s: %s. Rephrase the request, or decide with what you have.", d.Domain, d.Operation)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Tools found for %s: %s (now offered as functions):\n", d.Domain, d.Operation)
	for _, t := range added {
		b.WriteString(toolLine(t))
	}
	b.WriteString("Decide again.")
	return b.String()
}

// resultText is a tool's output as the model sees it, cut to
// maxOutputInPrompt.
func resultText(out string) string {
	if len(out) > maxOutputInPrompt {
		return clip.Prefix(out, maxOutputInPrompt) + "\n[output truncated]"
	}
	return out
}

// conversation is the system prompt, the history (the last few turns, text
// only) and the message, marked as the end of what a prompt cache should
// keep: every later call of the message begins with all of it.
func conversation(req Request) []llm.Message {
	msgs := []llm.Message{{Role: llm.System, Content: systemPrompt}}
	h := req.History
	if len(h) > historyTurns {
		h = h[len(h)-historyTurns:]
	}
	for _, m := range h {
		if m.Role == llm.User || m.Role == llm.Assistant {
			msgs = append(msgs, llm.Message{Role: m.Role, Content: m.Content})
		}
	}
	msgs = append(msgs, llm.Message{Role: llm.User, Content: req.Message, Cache: true})
	return append(msgs, afterMessages(req)...)
}
