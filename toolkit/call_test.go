package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"adaptbot/toolkit"
)

// callerFunc is a toolkit.Caller made of a function.
type callerFunc func(ctx context.Context, name string, args json.RawMessage) (string, error)

func (f callerFunc) CallTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	return f(ctx, name, args)
}

var _ toolkit.Caller = callerFunc(nil)

func TestCallSendsArgumentsAsJSON(t *testing.T) {
	var gotName string
	var gotArgs json.RawMessage
	ctx := toolkit.WithCaller(context.Background(), callerFunc(func(_ context.Context, name string, args json.RawMessage) (string, error) {
		gotName, gotArgs = name, args
		return "5 miles = 8.04672 km", nil
	}))
	type conv struct {
		Value float64 `json:"value"`
		From  string  `json:"from"`
	}
	for _, tt := range []struct {
		args any
		want string
	}{
		{conv{5, "mi"}, `{"value":5,"from":"mi"}`},
		{map[string]any{"value": 5}, `{"value":5}`},
		{json.RawMessage(`{"value": 5}`), `{"value": 5}`},
		{nil, `{}`},
		{json.RawMessage(nil), `{}`},
	} {
		out, err := toolkit.Call(ctx, "unit_converter", tt.args)
		if err != nil || out != "5 miles = 8.04672 km" {
			t.Fatalf("Call(%v) = %q, %v", tt.args, out, err)
		}
		if gotName != "unit_converter" || string(gotArgs) != tt.want {
			t.Errorf("Call(%v) sent %s %s, want unit_converter %s", tt.args, gotName, gotArgs, tt.want)
		}
	}
}

func TestCallRefusesWhatIsNotArguments(t *testing.T) {
	called := false
	ctx := toolkit.WithCaller(context.Background(), callerFunc(func(context.Context, string, json.RawMessage) (string, error) {
		called = true
		return "", nil
	}))
	for _, args := range []any{`{"value": 5}`, []byte(`{}`), json.RawMessage(`{"value": `), func() {}} {
		if _, err := toolkit.Call(ctx, "x", args); err == nil || !strings.Contains(err.Error(), `toolkit.Call("x")`) {
			t.Errorf("Call(%T) = %v, want an error naming the call", args, err)
		}
	}
	if called {
		t.Error("a call with bad arguments reached the host")
	}
}

func TestCallWithoutCaller(t *testing.T) {
	_, err := toolkit.Call(context.Background(), "calculator", nil)
	if !errors.Is(err, toolkit.ErrNoCaller) || !strings.Contains(err.Error(), "calculator") {
		t.Errorf("Call without a caller = %v, want ErrNoCaller naming the tool", err)
	}
	var out map[string]any
	if err := toolkit.CallJSON(context.Background(), "calculator", nil, &out); !errors.Is(err, toolkit.ErrNoCaller) {
		t.Errorf("CallJSON without a caller = %v", err)
	}
}

func TestCallAfterCancel(t *testing.T) {
	called := false
	ctx, cancel := context.WithCancel(toolkit.WithCaller(context.Background(), callerFunc(func(context.Context, string, json.RawMessage) (string, error) {
		called = true
		return "", nil
	})))
	cancel()
	if _, err := toolkit.Call(ctx, "x", nil); !errors.Is(err, context.Canceled) || called {
		t.Errorf("Call on a cancelled context = %v (called %v), want context.Canceled and no call", err, called)
	}
}

func TestCallJSON(t *testing.T) {
	ctx := toolkit.WithCaller(context.Background(), callerFunc(func(_ context.Context, name string, _ json.RawMessage) (string, error) {
		switch name {
		case "stats":
			return `{"words": 3, "most_common": "a"}`, nil
		case "text":
			return "3 words", nil
		}
		return "", errors.New(`no tool named "` + name + `"`)
	}))
	var out struct {
		Words      int    `json:"words"`
		MostCommon string `json:"most_common"`
	}
	if err := toolkit.CallJSON(ctx, "stats", nil, &out); err != nil || out.Words != 3 || out.MostCommon != "a" {
		t.Errorf("CallJSON = %+v, %v", out, err)
	}
	err := toolkit.CallJSON(ctx, "text", nil, &out)
	if err == nil || !strings.Contains(err.Error(), `"3 words"`) || !strings.Contains(err.Error(), "toolkit.Call returns it as text") {
		t.Errorf("CallJSON of a text output = %v, want an error quoting it and pointing to Call", err)
	}
	if err := toolkit.CallJSON(ctx, "nope", nil, &out); err == nil || err.Error() != `no tool named "nope"` {
		t.Errorf("CallJSON of an unknown tool = %v, want the host's error as is", err)
	}
}
