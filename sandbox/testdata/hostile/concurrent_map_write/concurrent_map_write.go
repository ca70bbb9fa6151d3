// Package concurrent_map_write writes one map from two goroutines at once.
package concurrent_map_write

import "context"

type Input struct{}

func Execute(ctx context.Context, in Input) (int, error) {
	m := map[int]int{}
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; ; i++ {
				m[i%1024] = i
			}
		}()
	}
	for i := 0; ; i++ {
		m[i%1024] = i
	}
	return len(m), nil
}
