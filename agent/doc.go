// Package agent is AdaptBot's chat orchestrator. Every message runs through
// one graph compiled once, in New:
//
//	classifier ─┬─ (text) ────────── general ─────────────── end
//	            ├─ (tool calls) ──── execute ─┬─ synthesizer ─┬─ end
//	            │                       ▲     │               │ (more calls)
//	            │                       └─────┼───────────────┘
//	            │                             └─ direct ──────── end
//	            │                          (output marked as the answer)
//	            ├─ (build request) ─ build ───────────────── end
//	            └─ (no tool fits) ── need_tool ───────────── end
//
// The classifier makes one model call: a shortlist of tools from a Finder
// (never the whole catalog) is offered as functions with their schemas,
// next to request_tools (show me more tools), build_tool and need_tool. A
// text reply is the direct answer, streamed; tool calls carry their
// arguments. A message is one conversation: every model call sends the one
// system prompt, the same functions in a stable order (the agent's three,
// then the tools as offered) and everything said so far, calls and results
// as native tool messages, so each call's prompt begins with the previous
// one and a provider's prompt cache can serve it. The tool calls of one
// reply run at once, each under its own limits. A local tool is offered
// with one more argument, DirectFlag, by which the model says the call's
// output alone is the answer: then it is the answer, with no further model
// call. Tools are looked up live at every step, so adding, editing or
// removing one changes nothing here. The agent never runs tool code itself:
// it calls toolbox.Tool, which validates and runs it in the sandbox or on
// its MCP server.
package agent
