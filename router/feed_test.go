package router

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"adaptbot"
	"adaptbot/toolbox"
)

// fakeTools is a toolbox with no tools to start with; change tells the
// feed of a change.
type fakeTools struct {
	specs     []toolbox.Spec
	listeners []func(toolbox.Change)
}

var _ Tools = (toolbox.Box)(nil)

type specTool struct{ spec toolbox.Spec }

func (t specTool) Spec() toolbox.Spec { return t.spec }
func (t specTool) Call(context.Context, json.RawMessage) (string, error) {
	return "", fmt.Errorf("not callable")
}

func (f *fakeTools) Serving() []toolbox.Tool {
	var out []toolbox.Tool
	for _, s := range f.specs {
		out = append(out, specTool{s})
	}
	return out
}

func (f *fakeTools) OnChange(fn func(toolbox.Change)) { f.listeners = append(f.listeners, fn) }

func (f *fakeTools) change(kind toolbox.ChangeKind, s toolbox.Spec) {
	for _, fn := range f.listeners {
		fn(toolbox.Change{Kind: kind, Spec: s})
	}
}

func local(name, domain, desc string) toolbox.Spec {
	return toolbox.Spec{Name: name, Category: domain, Description: desc, Origin: adaptbot.OriginGenerated}
}

// TestFeedLearningFollowsTheTool checks the feed's two cases that the
// router's keys make awkward: a local tool whose category changes keeps
// what it learned, and a remote tool learns a request from before its
// server listed it.
func TestFeedLearningFollowsTheTool(t *testing.T) {
	tools := &fakeTools{specs: []toolbox.Spec{local("digits", "math", "Evaluates arithmetic.")}}
	f := NewFeed(New(), tools, FeedOptions{Learn: true})
	f.Learn("digits", "crunch these figures")
	tools.change(toolbox.Updated, local("digits", "numbers", "Evaluates arithmetic."))
	if n := f.ix.Learned("numbers", "digits"); n != 1 {
		t.Errorf("after a category change the tool remembers %d requests, want 1", n)
	}
	if got := f.Find(t.Context(), "crunch those figures", 1); len(got) != 1 || got[0] != "digits" {
		t.Errorf("Find = %v, want [digits]", got)
	}

	f.Learn("weather/forecast", "is it chilly tonight")
	tools.change(toolbox.Added, toolbox.Spec{Name: "weather/forecast", Category: "weather", Description: "Daily forecast for a city.", Origin: adaptbot.OriginRemote})
	if got := f.Find(t.Context(), "will it be chilly tonight", 1); len(got) != 1 || got[0] != "weather/forecast" {
		t.Errorf("Find = %v, want [weather/forecast]", got)
	}
	tools.change(toolbox.Removed, toolbox.Spec{Name: "weather/forecast", Category: "weather"})
	tools.change(toolbox.Removed, local("digits", "numbers", ""))
	if n := f.ix.Len(); n != 0 {
		t.Errorf("after both were removed the index holds %d tools", n)
	}

	off := NewFeed(New(), &fakeTools{specs: []toolbox.Spec{local("digits", "numbers", "Evaluates arithmetic.")}}, FeedOptions{})
	off.Learn("digits", "crunch these figures")
	if n := off.ix.Learned("numbers", "digits"); n != 0 {
		t.Errorf("with learning off the tool remembers %d requests", n)
	}
}

// TestFeedDescribesRemoteDomains checks that a remote tool is indexed under
// its server, with the server's description, and found as "server/tool".
func TestFeedDescribesRemoteDomains(t *testing.T) {
	tools := &fakeTools{}
	f := NewFeed(New(), tools, FeedOptions{Describe: func(server string) string {
		if server == "weather" {
			return "Weather forecasts and current conditions for any city."
		}
		return ""
	}})
	tools.change(toolbox.Added, toolbox.Spec{Name: "weather/get_alerts", Category: "weather", Description: "List alerts.", Origin: adaptbot.OriginRemote})
	tools.change(toolbox.Added, local("alerts", "ops", "List alerts of the build."))
	if got := f.Find(t.Context(), "weather alerts", 1); len(got) != 1 || got[0] != "weather/get_alerts" {
		t.Errorf("Find = %v, want [weather/get_alerts]: the server's description ranks its domain", got)
	}
}

// TestLearnFromKeepsWhatTheRouterWould checks that replaying past uses
// teaches the ones the router would keep: each tool's newest, older tools'
// uses included.
func TestLearnFromKeepsWhatTheRouterWould(t *testing.T) {
	f := NewFeed(New(), &fakeTools{specs: []toolbox.Spec{
		local("old_tool", "a", "An old tool."),
		local("busy_tool", "b", "A busy tool."),
	}}, FeedOptions{Learn: true})
	var uses []Use
	for i := range 5 {
		uses = append(uses, Use{"old_tool", fmt.Sprintf("old request %d", 10+i)}) // two digits: one is no term
	}
	for i := range 3 * LearnedPerTool {
		uses = append(uses, Use{"busy_tool", fmt.Sprintf("busy request %d", 10+i)})
	}
	uses = append(uses, Use{"gone_tool", "a request for a tool that is gone"})
	if n := f.LearnFrom(uses); n != 5+LearnedPerTool {
		t.Errorf("taught %d uses, want %d", n, 5+LearnedPerTool)
	}
	if n := f.ix.Learned("a", "old_tool"); n != 5 {
		t.Errorf("old_tool learned %d requests, want 5", n)
	}
	if n := f.ix.Learned("b", "busy_tool"); n != LearnedPerTool {
		t.Errorf("busy_tool learned %d requests, want %d", n, LearnedPerTool)
	}
	// The newest of them, not the oldest.
	if got := f.Find(t.Context(), fmt.Sprintf("request %d", 10+3*LearnedPerTool-1), 1); len(got) != 1 || got[0] != "busy_tool" {
		t.Errorf("the newest busy request finds %v", got)
	}
	if got := f.Find(t.Context(), "request 10", 1); len(got) != 1 || got[0] != "old_tool" {
		t.Errorf("a request only old_tool served finds %v", got)
	}
}
