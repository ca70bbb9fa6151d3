//go:build !unix

package main

// startedAsWorker cannot tell here; the worker says what is missing itself.
func startedAsWorker() bool { return true }
