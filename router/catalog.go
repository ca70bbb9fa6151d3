package router

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Server is one entry of a catalog file: an MCP server and its tools, in the
// shape of an MCP tools/list answer.
type Server struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Category    string        `json:"category,omitempty"`
	Tools       []CatalogTool `json:"tools"`
}

// CatalogTool is one tool of a catalog Server.
type CatalogTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// ReadCatalog decodes a catalog (a JSON array of Servers) into Docs, one per
// tool, with the server's name as the domain.
func ReadCatalog(r io.Reader) ([]Doc, error) {
	var servers []Server
	if err := json.NewDecoder(r).Decode(&servers); err != nil {
		return nil, fmt.Errorf("decode catalog: %w", err)
	}
	var docs []Doc
	for i, s := range servers {
		if s.Name == "" {
			return nil, fmt.Errorf("catalog server %d: no name", i)
		}
		for j, t := range s.Tools {
			if t.Name == "" {
				return nil, fmt.Errorf("catalog server %q tool %d: no name", s.Name, j)
			}
			docs = append(docs, Doc{
				Server:            s.Name,
				ServerDescription: s.Description,
				Name:              t.Name,
				Description:       t.Description,
				Params:            ParamsFromSchema(t.InputSchema),
			})
		}
	}
	return docs, nil
}

// LoadCatalog reads a catalog file; see ReadCatalog.
func LoadCatalog(path string) ([]Doc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	docs, err := ReadCatalog(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return docs, nil
}

// Build returns an Index holding docs.
func Build(docs []Doc, opts ...Option) *Index {
	ix := New(opts...)
	for _, d := range docs {
		ix.Upsert(d)
	}
	return ix
}
