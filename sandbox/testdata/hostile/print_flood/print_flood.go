// Package print_flood prints megabytes to standard output, then answers.
package print_flood

import (
	"context"
	"fmt"
	"strings"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	line := strings.Repeat("spam ", 200)
	for i := 0; i < 2000; i++ {
		fmt.Println(line)
	}
	return "printed", nil
}
