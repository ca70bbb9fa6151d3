// Package router finds the few tools worth showing a model out of hundreds or
// thousands: AdaptBot's own tools plus those of every connected MCP server.
//
// An Index holds one Doc per tool, keyed by (Server, Name), where Server is the
// tool's domain: a local tool's category or an MCP server's name. It ranks tools
// for a free-text request with a field-weighted BM25 (BM25F) over the tool's
// name, description, parameters and domain, and with a second BM25 over whole
// domains; Route fuses the two. Tool names are split (snake_case, camelCase,
// kebab-case), English words are stemmed, and CJK text is indexed as character
// bigrams. Upsert and Remove update the postings and the length and document
// frequency counts in place; IDF is computed at query time, so no change ever
// rebuilds the index. Reads run concurrently with writes.
//
// An optional Embedder (declared here, implemented elsewhere) adds dense
// scores to the lexical ones, at a small share; any embedding failure falls
// back to the lexical ranking, which stands on its own.
//
// A Feed keeps an Index in step with the tools that serve (a toolbox.Box:
// one Upsert or Remove per change, local or remote), finds tools by the names
// the rest of AdaptBot uses, and holds the learning policy: what a request a
// tool served well teaches, and which past uses are replayed at start-up.
//
// The package must not learn from anything but the tools it is given: it has no
// vocabulary, synonyms or weights drawn from a benchmark. Its evaluation (the
// dataset harness and the baselines) lives in router/routereval, and the
// `adaptbot route` command in app.
package router
