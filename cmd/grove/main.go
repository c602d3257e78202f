// Command grove gives every coding agent its own head — a real Git linked
// worktree that can be checkpointed, restored, forked and resumed exactly —
// from a shell, a script or another tool.
//
// Run it inside a Git repository (or name one with --repo). Heads go where
// the Git backend puts them (beside the repository, in <repo>.grove/), or
// where --dir says. Sessions live in one SQLite database under $GROVE_HOME
// (default $XDG_DATA_HOME/grove, else ~/.local/share/grove).
//
// Every command exits 0 on success. A failure prints one line on stderr,
// "grove: OP: what went wrong" (OP is the command's name: "checkpoint",
// "resume"), and exits 1; a usage error exits 2. With --json, the commands
// that print data print it as JSON (diff still prints a patch, run its
// command's output), and a failure prints a JSON object {"code", "op",
// "head", "reason", "message"} on stderr instead.
//
// The head commands that change a head (new, checkpoint, restore, fork,
// destroy) act on it directly, as a library caller holding it would; they
// wait up to --wait for another grove command that holds an isolated head
// to let it go. The commands that read (ls, status, log, diff, path) open
// heads read-only and take no lock, so they never stand in a session's
// way. Sessions (grove session, grove run) add what the engine adds: a
// durable binding, a claim on the head, a journal, and exact resume.
//
// Run from inside a head, grove finds the repository through the head's
// .git file only when the repository owns that head back (see the
// gitbackend package's threat model); --repo names it explicitly.
//
// Run "grove tour" for a narrated demonstration and "grove help COMMAND"
// for each command's arguments and an example.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	hideFromChildren()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
