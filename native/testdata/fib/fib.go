// Package fib computes Fibonacci numbers the slow way, by recursion: the
// work the native tier is for.
package fib

import "context"

// Input is which Fibonacci number to compute.
type Input struct {
	N int `json:"n"`
}

// Output is the number.
type Output struct {
	Fib int `json:"fib"`
}

// Execute computes the N-th Fibonacci number recursively.
func Execute(ctx context.Context, in Input) (Output, error) {
	return Output{Fib: fib(in.N)}, nil
}

func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}
