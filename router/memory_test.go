package router

import (
	"fmt"
	"sync"
	"testing"
)

// TestLearnFindsParaphrases checks the point of Learn: a request in words
// no tool's text holds finds the tool that served one like it before, in
// Fused and Flat, and Hierarchical is left as it was.
func TestLearnFindsParaphrases(t *testing.T) {
	ix := Build(miniDocs(t))
	const ask = "is it going to be chilly outside tonight"
	if hits := ix.Route(ask, 3); len(hits) > 0 && hits[0].Name == "get_forecast" {
		t.Fatalf("the catalog alone already routes %q to get_forecast; the test proves nothing", ask)
	}
	if !ix.Learn("Weather Service", "get_forecast", "will it be chilly outside tomorrow morning") {
		t.Fatal("Learn refused an indexed tool")
	}
	for _, m := range []Mode{Fused, Flat} {
		if hits := ix.RouteMode(ask, 3, m); len(hits) == 0 || hits[0].Name != "get_forecast" {
			t.Errorf("%v after Learn: %v, want get_forecast first", m, names(hits))
		}
	}
	if hits := ix.RouteMode(ask, 3, Hierarchical); len(hits) > 0 && hits[0].Name == "get_forecast" {
		t.Errorf("Hierarchical used what was learned: %v", names(hits))
	}
	// The tool's own text still ranks as before for requests that match it.
	if hits := ix.Route("evaluate a mathematical expression", 1); len(hits) == 0 || hits[0].Name != "calculate" {
		t.Errorf("after Learn, a plain request = %v", names(hits))
	}
	if ix.Learn("Weather Service", "no_such_tool", "anything") || ix.Learn("Weather Service", "get_forecast", "the of and") {
		t.Error("Learn accepted an unknown tool or a request without terms")
	}
}

// TestLearnWeighsWordsByTheRequests checks that words every remembered
// request holds count for little: polite filler must not make often-used
// tools match every polite request.
func TestLearnWeighsWordsByTheRequests(t *testing.T) {
	ix := Build(miniDocs(t))
	ix.Learn("Weather Service", "get_forecast", "please tell me the weather in Paris")
	ix.Learn("Calculator", "calculate", "please work out 17 times 23")
	ix.Learn("Files", "read_file", "please show me what notes.txt says")
	for _, h := range ix.RouteMode("please", 5, Flat) {
		if h.Score > 0.25 {
			t.Errorf("%q scores %.3f for the request %q alone", h.Name, h.Score, "please")
		}
	}
	if hits := ix.RouteMode("please tell me the weather in Paris", 1, Flat); len(hits) == 0 || hits[0].Score < 1.9 {
		t.Errorf("a repeated request = %v, want get_forecast at its text score (1) plus a full memory match (1)", hits)
	}
	if hits := ix.Route("please work out 40 times 2", 1); len(hits) == 0 || hits[0].Name != "calculate" {
		t.Errorf("got %v, want calculate", names(hits))
	}
}

func TestLearnKeepsTheLastRequestsAndForgetsOnRemove(t *testing.T) {
	ix := Build(miniDocs(t))
	for i := range maxLearned + 5 {
		ix.Learn("Calculator", "calculate", fmt.Sprintf("sum request number%d", i))
	}
	ix.Learn("Calculator", "calculate", "sum request number24") // a repeat is not a new request
	if n := ix.Learned("Calculator", "calculate"); n != maxLearned {
		t.Errorf("remembers %d requests, want %d", n, maxLearned)
	}
	// The oldest went first.
	if hits := ix.RouteMode("number0", 3, Flat); len(hits) != 0 {
		t.Errorf("a forgotten request still routes: %v", names(hits))
	}
	if hits := ix.RouteMode("number24", 3, Flat); len(hits) == 0 || hits[0].Name != "calculate" {
		t.Errorf("the newest request does not route: %v", names(hits))
	}

	// A changed tool keeps what it learned; a removed one forgets it, even
	// when a tool of the same name comes back.
	ix.Upsert(Doc{Server: "Calculator", Name: "calculate", Description: "Evaluates arithmetic."})
	if n := ix.Learned("Calculator", "calculate"); n != maxLearned {
		t.Errorf("after Upsert: %d requests, want %d", n, maxLearned)
	}
	ix.Remove("Calculator", "calculate")
	ix.Upsert(Doc{Server: "Calculator", Name: "calculate", Description: "Evaluates arithmetic."})
	if n := ix.Learned("Calculator", "calculate"); n != 0 {
		t.Errorf("after Remove and Upsert: %d requests, want 0", n)
	}
	if hits := ix.RouteMode("number24", 3, Flat); len(hits) != 0 {
		t.Errorf("a removed tool's requests still route: %v", names(hits))
	}
	if ix.mem.n != 0 || len(ix.mem.df) != 0 || len(ix.mem.post) != 0 {
		t.Errorf("memory not empty after its only tool was removed: n %d, %d terms", ix.mem.n, len(ix.mem.df))
	}
}

// TestLearnConcurrently runs Learn, Route, Upsert and Remove together, for
// the race detector.
func TestLearnConcurrently(t *testing.T) {
	ix := Build(miniDocs(t))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				switch (g + i) % 4 {
				case 0:
					ix.Learn("Files", "read_file", fmt.Sprintf("open document %d", i%30))
				case 1:
					ix.Route("open document 7", 3)
				case 2:
					ix.Upsert(Doc{Server: "Files", Name: "scratch", Description: "A scratch tool."})
					ix.Learn("Files", "scratch", "scratch pad")
				default:
					ix.Remove("Files", "scratch")
				}
			}
		}()
	}
	wg.Wait()
	if n := ix.Learned("Files", "read_file"); n != maxLearned {
		t.Errorf("read_file remembers %d requests, want %d", n, maxLearned)
	}
}

// TestLearnBoundsTheWholeMemory checks that the memory holds at most
// maxRemembered requests over all tools, dropping the oldest, and that
// renewing requests does not make its bookkeeping grow.
func TestLearnBoundsTheWholeMemory(t *testing.T) {
	ix := New()
	tools := maxRemembered/maxLearned + 2
	for i := range tools {
		ix.Upsert(Doc{Server: "s", Name: fmt.Sprintf("tool%d", i), Description: "does a thing"})
	}
	for i := range tools * maxLearned {
		ix.Learn("s", fmt.Sprintf("tool%d", i/maxLearned), fmt.Sprintf("request word%d", i))
	}
	if ix.mem.n != maxRemembered {
		t.Errorf("memory holds %d requests, want %d", ix.mem.n, maxRemembered)
	}
	if n := ix.Learned("s", "tool0"); n != 0 {
		t.Errorf("the oldest tool still remembers %d requests", n)
	}
	last := fmt.Sprintf("tool%d", tools-1)
	if n := ix.Learned("s", last); n != maxLearned {
		t.Errorf("the newest tool remembers %d requests, want %d", n, maxLearned)
	}
	for range 10 * maxRemembered {
		ix.Learn("s", last, fmt.Sprintf("request word%d", tools*maxLearned-1))
	}
	if len(ix.mem.order) > 2*maxRemembered {
		t.Errorf("renewals grew the order list to %d entries", len(ix.mem.order))
	}
}

// TestLearnLaterWaitsForTheTool checks that a request for a tool not
// indexed yet (an MCP server that has not listed its tools) is learned when
// the tool arrives, and only then.
func TestLearnLaterWaitsForTheTool(t *testing.T) {
	ix := Build(miniDocs(t))
	ix.LearnLater("Remote", "fetch_page", "grab the article at this link")
	ix.LearnLater("Remote", "other", "never arrives")
	if hits := ix.RouteMode("grab the article at this link", 3, Flat); len(hits) != 0 {
		t.Fatalf("routed before the tool exists: %v", names(hits))
	}
	ix.Upsert(Doc{Server: "Remote", Name: "fetch_page", Description: "Downloads a web page."})
	if n := ix.Learned("Remote", "fetch_page"); n != 1 {
		t.Errorf("fetch_page learned %d requests on arrival, want 1", n)
	}
	if hits := ix.Route("grab the article at that link", 1); len(hits) == 0 || hits[0].Name != "fetch_page" {
		t.Errorf("got %v, want fetch_page", names(hits))
	}
	if len(ix.pending) != 1 {
		t.Errorf("%d requests still wait, want 1 (for the tool that never arrived)", len(ix.pending))
	}
	ix.LearnLater("Remote", "fetch_page", "pull down that story") // indexed now: learned at once
	if n := ix.Learned("Remote", "fetch_page"); n != 2 {
		t.Errorf("fetch_page learned %d requests, want 2", n)
	}
	for i := range maxPending + 3 {
		ix.LearnLater("Gone", "tool", fmt.Sprintf("request %d", i))
	}
	if len(ix.pending) != maxPending {
		t.Errorf("%d requests wait, want at most %d", len(ix.pending), maxPending)
	}
}

// TestMoveLearned checks that a tool moved to another domain keeps what it
// learned.
func TestMoveLearned(t *testing.T) {
	ix := Build(miniDocs(t))
	ix.Learn("Calculator", "calculate", "crunch some digits")
	ix.Upsert(Doc{Server: "Math", Name: "calculate", Description: "Evaluate a mathematical expression."})
	if !ix.MoveLearned("Calculator", "Math", "calculate") {
		t.Fatal("MoveLearned refused two indexed tools")
	}
	ix.Remove("Calculator", "calculate")
	if n := ix.Learned("Math", "calculate"); n != 1 {
		t.Errorf("the moved tool remembers %d requests, want 1", n)
	}
	if hits := ix.Route("crunch these digits", 1); len(hits) == 0 || hits[0].Server != "Math" {
		t.Errorf("got %v, want Math/calculate", hits)
	}
	if ix.MoveLearned("Calculator", "Math", "calculate") {
		t.Error("MoveLearned from a removed tool reported success")
	}
}
