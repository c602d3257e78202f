// Command nocgo opens an engine in a binary built with CGO_ENABLED=0 and
// prints what Open answered: the test in nocgo_test.go builds and runs it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
)

func main() {
	_, err := engine.Open(context.Background(), engine.Options{Path: os.Args[1]})
	var se *engine.StoreError
	fmt.Printf("code=%s store-error=%v kind=%s\n%v\n", grove.CodeOf(err), errors.As(err, &se), kindOf(se), err)
}

func kindOf(se *engine.StoreError) engine.StoreKind {
	if se == nil {
		return ""
	}
	return se.Kind
}
