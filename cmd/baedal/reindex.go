package main

import (
	"context"
	"os"

	"github.com/baedal/baedal/reindex"
)

func runReindex(ctx context.Context, args []string) error {
	return reindex.CLI(ctx, args, os.Stdout, os.Stderr)
}
