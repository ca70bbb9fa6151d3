package router

import (
	"encoding/json"
	"sort"
)

// ParamsFromSchema returns the top-level properties of a JSON schema with
// their descriptions, sorted by name. It accepts an object schema as raw JSON
// (a JSON string holding a schema is unwrapped once); anything it cannot read
// yields no params.
func ParamsFromSchema(schema json.RawMessage) []Param {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
			Title       string `json:"title"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		var inner string
		if json.Unmarshal(schema, &inner) != nil || json.Unmarshal([]byte(inner), &s) != nil {
			return nil
		}
	}
	out := make([]Param, 0, len(s.Properties))
	for name, p := range s.Properties {
		desc := p.Description
		if desc == "" {
			desc = p.Title
		}
		out = append(out, Param{Name: name, Description: desc})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ParamsFromMap is ParamsFromSchema for a schema already decoded into a map
// (as MCP SDKs and registries often hold it).
func ParamsFromMap(schema map[string]any) []Param {
	if schema == nil {
		return nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	return ParamsFromSchema(b)
}
