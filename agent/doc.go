// Package agent is AdaptBot's chat orchestrator. An intent step sorts each
// message into CHAT or BUILD; a CHAT message runs through a graph compiled
// once, in New:
//
//	classifier ─┬─ general ───────────────────┐
//	            ├─ execute ── synthesizer ────┼─ end
//	            └─ need_tool ─────────────────┘
//
// The classifier sees a shortlist of tools from a Finder, never the whole
// registry, and may ask for more (active discovery). Tools are looked up live
// at every step, so adding, editing or removing one changes nothing here.
// The agent never runs tool code itself: execute hands it to the sandbox.
package agent
