// Package contracttest lets a tool's own tests check that its source meets the
// contract and declares what the tool's authors meant it to. It is for tests.
package contracttest

import (
	"encoding/json"
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
}

// Check parses <name>.go, in the test's working directory (the tool's folder),
// with contract.Parse and reports every way it differs from w.
func Check(t testing.TB, name string, w Want) {
	t.Helper()
	src, err := os.ReadFile(name + ".go")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := contract.Parse(name, src)
	if err != nil {
		t.Fatalf("contract.Parse: %v", err)
	}
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
	if err := json.Unmarshal(spec.Schema, &schema); err != nil {
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
}
