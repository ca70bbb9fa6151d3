// Package benchmarks records one CSV row per request and summarizes the
// file into a report.
//
// Every /chat request, every direct tool run and every tool build appends
// exactly one Row to a CSV file (DefaultPath unless configured) through a
// Logger. Analysts read that file with their own scripts, so its columns are
// a contract: the names and order are given by Header, values are plain text
// a spreadsheet understands (seconds as decimals, True/False/N/A), and a file
// with an older header is never appended to (see Open).
//
// ReadFile reads the file back by column name, so older files with fewer
// columns still read, and Summarize turns rows into the Report behind
// `adaptbot report` and the dashboard.
//
// The package knows nothing of HTTP, models or graphs: callers fill a Row.
package benchmarks
