// Package service is where a request is carried out, whatever door it came
// through: the page and the HTTP API, /mcp, chat builds and the command line
// (through the server). Each operation (Chat, Run, Build, Delete, Rollback,
// Approve, Test, Plan, Import, Repair, Feedback, and a tool call over MCP)
// stamps the request ID, checks the caller's identity, takes the cluster
// lock where one is needed, writes exactly one benchmark row and one trace,
// opens one span tree, and returns errors with a Kind. Reads (lists, a
// tool, a stored request) check and open a span, but write no row.
//
// It knows nothing of HTTP: the edge (package main in app/) decodes, calls
// an operation and encodes, turning a Kind into a status with one switch.
// It must not import app.
package service
