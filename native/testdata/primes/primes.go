// Package primes says whether a number is the product of three primes, by
// trial division (HumanEval's IsMultiplyPrime, over a range): loops and
// arithmetic, no recursion.
package primes

import "context"

// Input is the range [From, To) to count in.
type Input struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Output is how many numbers of the range are a product of three primes.
type Output struct {
	Count int `json:"count"`
}

// Execute counts the products of three primes in [From, To).
func Execute(ctx context.Context, in Input) (Output, error) {
	n := 0
	for a := in.From; a < in.To; a++ {
		if isMultiplyPrime(a) {
			n++
		}
	}
	return Output{Count: n}, nil
}

func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for i := 2; i*i <= n; i++ {
		if n%i == 0 {
			return false
		}
	}
	return true
}

func isMultiplyPrime(a int) bool {
	for i := 2; i < 101; i++ {
		if !isPrime(i) {
			continue
		}
		for j := 2; j < 101; j++ {
			if !isPrime(j) {
				continue
			}
			for k := 2; k < 101; k++ {
				if isPrime(k) && i*j*k == a {
					return true
				}
			}
		}
	}
	return false
}
