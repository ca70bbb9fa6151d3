// Package benchmarks records one CSV row per request and summarizes the
// rows for the dashboard, the API and `adaptbot report`.
//
// Every /chat request, every direct tool run and every tool build appends
// exactly one Row to a CSV file (DefaultPath unless configured) through a
// Logger. Analysts read that file with their own scripts, so its columns are
// a contract: the names and order are given by Header, values are plain text
// a spreadsheet understands (seconds as decimals, True/False/N/A), text is
// cleaned of control characters (Clean), and a file with an older header is
// never appended to (see Open). README.md beside this file is the column
// dictionary for analysts.
//
// ReadFile and Scan read the file back by column name, so older files with
// fewer columns still read. A Store keeps aggregates of the rows in bounded
// memory: LoadFile builds it in one streaming pass, Logger.SetSink keeps it
// current, and Store.Query answers a Filter with a Summary.
//
// The package knows nothing of HTTP, models or graphs: callers fill a Row.
package benchmarks
