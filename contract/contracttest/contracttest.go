// Package contracttest lets a tool's own tests check that its source meets the
// contract and declares what the tool's authors meant it to. It is for tests.
package contracttest

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"adaptbot/contract"
)

// Want is what a tool's source must declare.
type Want struct {
	Category string
	// Timeout is the tool's own limit; zero means it declares none.
	Timeout time.Duration
	// Description is how the description must start.
	Description string
	// Properties maps each parameter to its JSON type; every one must be
	// described, and there must be no others.
	Properties map[string]string
	// Required lists the required parameters, in order.
	Required []string
	// Output maps each property of the result to its JSON type ("number",
	// or "number|null" for a value that may be null) when Execute returns
	// an Output struct; nil means it returns something else.
	Output map[string]string
}

// Check parses <name>.go, in the test's working directory (the tool's folder),
// with contract.Parse and reports every way it differs from w.
func Check(t testing.TB, name string, w Want) {
	t.Helper()
	spec := parse(t, name)
	if spec.Category != w.Category || spec.Timeout != w.Timeout {
		t.Errorf("Category, Timeout = %q, %v; want %q, %v", spec.Category, spec.Timeout, w.Category, w.Timeout)
	}
	if !strings.HasPrefix(spec.Description, w.Description) {
		t.Errorf("Description = %q, want it to start %q", spec.Description, w.Description)
	}
	var schema struct {
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if len(schema.Properties) != len(w.Properties) {
		t.Errorf("properties = %v, want %v", schema.Properties, w.Properties)
	}
	for name, typ := range w.Properties {
		if p := schema.Properties[name]; p.Type != typ || p.Description == "" {
			t.Errorf("property %s = %+v, want a described %s", name, p, typ)
		}
	}
	if !reflect.DeepEqual(schema.Required, w.Required) {
		t.Errorf("required = %v, want %v", schema.Required, w.Required)
	}
	checkOutput(t, spec.Output, w.Output)
}

func parse(t testing.TB, name string) *contract.Spec {
	t.Helper()
	src, err := os.ReadFile(name + ".go")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := contract.Parse(name, src)
	if err != nil {
		t.Fatalf("contract.Parse: %v", err)
	}
	return spec
}

// checkOutput compares the output schema's properties with want.
func checkOutput(t testing.TB, output json.RawMessage, want map[string]string) {
	t.Helper()
	if want == nil {
		if output != nil {
			t.Errorf("output schema = %s, want none", output)
		}
		return
	}
	var schema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(output, &schema); err != nil || output == nil {
		t.Fatalf("output schema %s: %v", output, err)
	}
	got := map[string]string{}
	for name, p := range schema.Properties {
		switch typ := p.Type.(type) {
		case string:
			got[name] = typ
		case []any:
			var parts []string
			for _, x := range typ {
				parts = append(parts, fmt.Sprint(x))
			}
			got[name] = strings.Join(parts, "|")
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("output properties = %v, want %v", got, want)
	}
}

// CheckResult encodes result, a value Execute returned, as the sandbox
// does and checks it against the output schema derived from <name>.go, so
// that what MCP clients are promised (outputSchema) is what they get
// (structuredContent).
func CheckResult(t testing.TB, name string, result any) {
	t.Helper()
	spec := parse(t, name)
	if spec.Output == nil {
		t.Fatalf("%s declares no Output result", name)
	}
	raw, err := json.Marshal(result)
	if err != nil {
		t.Fatal(err)
	}
	if err := contract.ValidateResult(spec.Output, raw); err != nil {
		t.Errorf("result %s: %v", raw, err)
	}
}
