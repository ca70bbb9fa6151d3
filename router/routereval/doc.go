// Package routereval measures the router: the LiveMCPBench harness
// (catalog.json plus queries.jsonl), recall@5, recall@10 and per-step top-3
// recall, Route's latency at scale, and two baselines it must beat (a
// hierarchical TF-IDF design and plain BM25 over name and description).
// It also measures the router with a real embedding model (embedserver/, a
// Node helper that serves Universal Sentence Encoder lite on loopback), and the model traffic of a one-tool
// answer beside langchaingo's agent (the peer, its own module in peer/).
//
// It is the router's laboratory, kept beside the product package so that
// nothing here runs in production: `adaptbot route --eval DIR` and the tests
// call it. Its tests run on ../shared/datasets/livemcpbench from the
// repository root; they skip without it, and fail without it when
// ADAPTBOT_REQUIRE_DATASET=1 (as .ci/run sets).
package routereval
