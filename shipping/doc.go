// Package shipping takes tools out of AdaptBot and brings them in.
//
//   - Export writes chosen tools, with the tools they call, as a standalone
//     Go module: a server of those tools over MCP (stdio, or streamable
//     HTTP), their sources compiled natively, a copy of the toolkit code
//     they use with the same egress policy, a test per tool from its stored
//     examples, a README and a licence.
//   - WriteBundle packs tools (sources, examples, their registry entries)
//     into a tar.gz with a manifest of SHA-256 sums; ReadBundle unpacks one
//     it does not trust: every path, link, size and sum is checked.
//   - Import puts a bundle's tools through the gate every new tool passes
//     (contract, compile, examples, the tools they call) and writes them
//     only if all pass: a refused bundle writes nothing.
//
// Only serving, approved versions leave: a broken or pending tool is
// refused by name. The package writes the registry only through
// registry.Registry, and nothing at all while exporting but the files it
// is asked to write. It must not import app, agent or mcp.
package shipping
