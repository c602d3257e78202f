//go:build !linux

package services

import (
	"context"
	"time"
)

// List cannot list processes here.
func List(id, dir string, all bool) ([]Process, error) { return nil, ErrNoProcesses }

func stop(context.Context, []Process, time.Duration) error { return nil }
