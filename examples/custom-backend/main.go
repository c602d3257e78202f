// Command custom-backend is a grove backend written only against grove's
// public driver API: package backend, with backend/backendutil for the
// parts every backend that is not a Git worktree needs (ignore rules, a
// unified diff, the hook runner), and backend/backendtest in its test,
// which it passes with
// one call. Run, it shows the backend working in a temporary directory.
//
// # The plain-directory backend
//
// A workspace is a directory on the host (its locator) made by Init, which
// holds a .dirbackend state directory: a bare Git repository written by
// go-git (checkpoints are its commits, so a CheckpointID is a commit hash;
// branches and checkpoint refs are its refs), a record per head (a
// destroyed head's stays as its tombstone) and lock files. A head is a
// plain directory on the host, under the workspace's heads directory
// unless HeadSpec.Dir or OpenOptions.HeadsDir says otherwise; it has no
// .git. A binding carries the workspace's directory, so any Backend, in
// any process, reopens it.
//
// Capabilities: HostRoot (heads are host directories); Persistent (all
// state is files); CrossProcessIsolation and SharedCAS (an isolated head
// is held through a kernel file lock, WriteFile and WriteFileIf run under
// one, and such locks conflict within one process too); Symlinks and
// FileModes (except on Windows). It cannot attach to an existing checkout: HeadSpec.Attach is
// Unimplemented. Setup and Teardown hooks run on the host
// (backendutil.RunHook); under a sandbox they are Unimplemented, as its
// heads are not sealed.
//
// # Caveats
//
// What is ignored follows the heads' .gitignore files only: there is no
// info/exclude and no core.excludesFile. Entries named .git are never
// captured or removed. A checkpoint or status reads every file of the head
// (there is no index to remember what is unchanged), and a diff holds both
// trees in memory: this backend suits small heads. A restore cancelled
// while it writes stops between two files, with the branch where it was;
// running it again finishes it. Creating a head holds the workspace's lock while it writes the files.
// The example keeps to the contract, not to speed.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing/fstest"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	tmp, err := os.MkdirTemp("", "custom-backend-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	project := fstest.MapFS{
		"README.md":  {Data: []byte("hello\n")},
		".gitignore": {Data: []byte("*.log\n")},
	}
	locator := filepath.Join(tmp, "workspace")
	base, err := Init(locator, project)
	if err != nil {
		return err
	}
	fmt.Printf("workspace initialized at commit %.12s\n", base)

	b := New()
	defer b.Close()
	ws, err := b.OpenWorkspace(ctx, locator, &backend.OpenOptions{})
	if err != nil {
		return err
	}
	defer ws.Close()
	h, err := ws.CreateHead(ctx, &backend.HeadSpec{Name: "agent", Access: grove.Isolated, From: DefaultBranch})
	if err != nil {
		return err
	}
	fmt.Printf("head %q on branch %s in %s\n", h.Info().Name, h.Info().Branch, filepath.Base(h.Info().Root))

	if err := h.FS().WriteFile("README.md", []byte("hello\nworld\n"), 0o644); err != nil {
		return err
	}
	if err := h.FS().WriteFile("debug.log", []byte("ignored\n"), 0o644); err != nil {
		return err
	}
	st, err := h.Status(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("dirty: %v, changes: %v\n", st.Dirty, st.Changes)
	cp, err := h.Checkpoint(ctx, &backend.CheckpointOptions{Message: "say world", Author: grove.DefaultAuthor})
	if err != nil {
		return err
	}
	d, err := h.Diff(ctx, DefaultBranch, grove.Rev(cp.ID))
	if err != nil {
		return err
	}
	fmt.Printf("checkpoint %.12s: %+v\n%s", cp.ID, d.Files, indent(d.Patch))

	bind := h.Binding()
	if err := h.Close(); err != nil {
		return err
	}
	// A new Backend, as in another process, reopens exactly that head.
	b2 := New()
	defer b2.Close()
	ws2, h2, err := b2.Reopen(ctx, bind, &backend.ReopenOptions{})
	if err != nil {
		return err
	}
	defer ws2.Close()
	if _, err := h2.Restore(ctx, DefaultBranch); err != nil {
		return err
	}
	readme, err := h2.FS().ReadFile("README.md")
	if err != nil {
		return err
	}
	logged, err := h2.FS().ReadFile("debug.log")
	if err != nil {
		return err
	}
	fmt.Printf("reopened and restored to %s: README.md %q, the ignored debug.log kept %q\n", DefaultBranch, readme, logged)
	checkpoints, err := h2.Log(ctx, &backend.LogOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("log still lists %d checkpoint(s), newest %.12s\n", len(checkpoints), checkpoints[0].ID)
	return h2.Destroy(ctx, &backend.DestroyOptions{})
}

func indent(s string) string {
	return "\t" + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n\t") + "\n"
}
