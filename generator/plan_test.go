package generator

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"adaptbot"
	"adaptbot/llm"
	"adaptbot/llm/llmtest"
)

func TestPlanSaysNameAndInputsWithoutBuilding(t *testing.T) {
	var sent llm.Request
	f := newFixture(t, &llmtest.Fake{GenerateFunc: func(_ context.Context, r llm.Request) (llm.Response, error) {
		sent = r
		return llm.Response{Calls: []llm.FunctionCall{{Name: decideName, Arguments: json.RawMessage(
			`{"op":"CREATE","tool":"Roman Numerals","summary":"Convert a whole number to Roman numerals.","inputs":["number (integer)"," "]}`)}}}, nil
	}})
	p, err := f.gen.Plan(t.Context(), "convert 12 to roman numerals")
	if err != nil {
		t.Fatal(err)
	}
	if p.Op != Create || p.Tool != "roman_numerals" || p.Summary == "" || len(p.Inputs) != 1 || p.Inputs[0] != "number (integer)" {
		t.Errorf("plan = %+v", p)
	}
	if sent.Force != decideName {
		t.Errorf("plan forced %q", sent.Force)
	}
	if _, ok := f.reg.Entry("roman_numerals"); ok {
		t.Error("a plan registered a tool")
	}
}

func TestPlanRefusesWhatCannotBeBuilt(t *testing.T) {
	f := newFixture(t, &llmtest.Fake{GenerateFunc: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Calls: []llm.FunctionCall{{Name: decideName, Arguments: json.RawMessage(`{"op":"FLY","tool":"x","summary":"?"}`)}}}, nil
	}})
	if _, err := f.gen.Plan(t.Context(), "fly"); err == nil {
		t.Error("a plan with an unknown op was accepted")
	}
	r := newFixture(t, &llmtest.Fake{GenerateFunc: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Calls: []llm.FunctionCall{{Name: decideName, Arguments: json.RawMessage(`{"op":"CREATE","tool":"general","summary":"answer anything"}`)}}}, nil
	}})
	if _, err := r.gen.Plan(t.Context(), "a tool called general"); adaptbot.KindOf(err) != adaptbot.Invalid || !strings.Contains(err.Error(), `"general" is reserved`) {
		t.Errorf("a plan of a tool named general: %v, want the reserved name refused", err)
	}
	g := newFixture(t, nil)
	if _, err := g.gen.Plan(t.Context(), "anything"); !errors.Is(err, llm.ErrNoModel) {
		t.Errorf("plan without a model: %v", err)
	}
}
