package workspace

import "github.com/groveworks/grove/backend"

// Backend is a storage implementation (gitbackend, memorybackend) as a
// program holds it: pass one to Open, Reopen or the engine's Options.
// Every backend.Backend is one, and the other way round; a program never
// needs package backend to name it.
type Backend interface{ backend.Backend }
