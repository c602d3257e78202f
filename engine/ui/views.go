package ui

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/workspace"
)

// readers bounds how many heads one page reads at once.
const readers = 4

// headRow is one head in the overview.
type headRow struct {
	grove.HeadInfo
	Session *sessionRow
	Commit  grove.CheckpointID // the commit the head is at
	Dirty   bool               // a checkpoint now would make a commit
	Files   []grove.FileStat   // changed since the head's base, uncommitted work included
	Added   int
	Deleted int
	// Uncounted is set when the line counts leave uncommitted work out
	// (the overview's reading of a dirty head; see readHead).
	Uncounted    bool
	Pending      bool      // not read yet: the page shows it once the refresher has
	ReadAt       time.Time // when it was read
	Checkpointed time.Time // its last checkpoint's time
	Err          string    // why the head could not be read
}

// blank is the row as it starts a new reading: the head and its session.
func (r headRow) blank() headRow {
	return headRow{HeadInfo: r.HeadInfo, Session: r.Session, ReadAt: time.Now()}
}

// Activity is the newest of the head's last checkpoint and its session's
// last change.
func (r headRow) Activity() time.Time {
	if r.Session != nil && r.Session.Updated.After(r.Checkpointed) {
		return r.Session.Updated
	}
	return r.Checkpointed
}

// sessionRow is the session that holds (or last held) a head.
type sessionRow struct {
	engine.SessionInfo
	Word string // "live", "idle" (open, no process holds it) or "closed"
}

// sessions maps this workspace's heads to their newest session (an open
// one before any closed one). Without an engine, or when its database
// cannot be read, it is empty: the heads are still shown.
func (h *Handler) sessions(ctx context.Context) map[string]sessionRow {
	out := map[string]sessionRow{}
	if h.o.Engine == nil {
		return out
	}
	all, err := h.o.Engine.Sessions(ctx)
	if err != nil {
		return out
	}
	root := h.o.Workspace.Info().Locator
	for _, s := range all { // oldest first
		if s.Root != root {
			continue
		}
		row := sessionRow{SessionInfo: s, Word: "closed"}
		if s.State == engine.SessionOpen {
			row.Word = "idle"
			if s.Live {
				row.Word = "live"
			}
		}
		if prev, ok := out[s.Head]; ok && prev.State == engine.SessionOpen && s.State != engine.SessionOpen {
			continue
		}
		out[s.Head] = row
	}
	return out
}

// readHead fills a row from the head's status, its changes since its base
// and its last checkpoint, reading without a lock. With full, the changes
// are its files now against its base, line counts of uncommitted work
// included; without, they are its checkpoints' changes (whose counts are
// kept: commits do not change) and the paths its status lists, which
// costs one scan of its files instead of two. It returns the status it
// read (zero when it failed, as row.Err says).
func (h *Handler) readHead(ctx context.Context, hd *workspace.Head, row *headRow, full bool) grove.Status {
	st, err := hd.Status(ctx)
	if err != nil {
		row.Err = err.Error()
		return grove.Status{}
	}
	row.Commit, row.Dirty = st.Commit, st.Dirty
	base := grove.Rev(row.Base)
	if base == "" {
		base = grove.Rev(st.Commit)
	}
	if full {
		d, err := hd.Diff(ctx, base, grove.Live)
		if err != nil {
			row.Err = err.Error()
			return st
		}
		row.Files = d.Files
	} else {
		files, err := h.cache.committed(ctx, hd, base, st.Commit)
		if err != nil {
			row.Err = err.Error()
			return st
		}
		row.Files, row.Uncounted = files, st.Dirty
		for _, c := range st.Changes {
			if !slices.ContainsFunc(files, func(f grove.FileStat) bool { return f.Path == c.Path }) {
				row.Files = append(row.Files, grove.FileStat{Path: c.Path})
			}
		}
	}
	for _, f := range row.Files {
		row.Added += f.Added
		row.Deleted += f.Deleted
	}
	if log, err := hd.Log(ctx, &workspace.LogOptions{Limit: 1}); err == nil && len(log) > 0 {
		row.Checkpointed = log[0].Time
	}
	return st
}

// list lists the heads called names (every head, when names is nil; a
// name no head has is NotFound), in the workspace's order, with their
// sessions and each one's last reading; a head with none is Pending.
func (h *Handler) list(ctx context.Context, names []string) ([]headRow, error) {
	heads, err := h.o.Workspace.Heads(ctx)
	if err != nil {
		return nil, err
	}
	sessions := h.sessions(ctx)
	var rows []headRow
	live := map[grove.HeadID]bool{}
	for _, hi := range heads {
		live[hi.ID] = true
		if names != nil && !slices.Contains(names, hi.Name) {
			continue
		}
		row, at, ok := h.cache.get(hi.ID)
		row.HeadInfo, row.ReadAt, row.Pending, row.Session = hi, at, !ok, nil
		if s, ok := sessions[hi.Name]; ok {
			row.Session = &s
		}
		rows = append(rows, row)
	}
	if names == nil {
		h.cache.forget(live)
	}
	for _, n := range names {
		if !slices.ContainsFunc(rows, func(r headRow) bool { return r.Name == n }) {
			return nil, &grove.Error{Code: grove.NotFound, Op: "ui: head", Head: n, Err: grove.ErrNotFound}
		}
	}
	return rows, nil
}

// read reads again, workers at a time, the rows stale says need it (in
// full or not: see readHead), and keeps the readings that are not full.
func (h *Handler) read(ctx context.Context, rows []headRow, stale func(headRow) bool, workers int, full bool) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for i := range rows {
		if !stale(rows[i]) {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			row := rows[i].blank()
			if row.State != grove.StateArchived { // not readable until unarchived
				hd, err := h.readable(ctx, row.Name)
				if err != nil {
					row.Err = err.Error()
				} else {
					h.readHead(ctx, hd, &row, full)
					_ = hd.Close()
				}
			}
			rows[i] = row
			if !full && ctx.Err() == nil {
				h.cache.put(row, row.ReadAt)
			}
		})
	}
	wg.Wait()
}

// olderThan is a stale test: a row not read in the last d.
func olderThan(d time.Duration) func(headRow) bool {
	return func(r headRow) bool { return r.Pending || time.Since(r.ReadAt) > d }
}

// The overview and its fragment wait for no head: they show each head's
// last reading, whatever its age (the refresher keeps them fresh while the
// page is watched), and one not read yet as pending, which the next
// fragment fills in.
func (h *Handler) overview(w http.ResponseWriter, r *http.Request) {
	rows, err := h.list(r.Context(), nil)
	if err != nil {
		h.fail(w, r, "heads", "", err)
		return
	}
	h.render(w, r, http.StatusOK, "overview", repoName(h.o.Workspace.Info().Locator), rows)
}

func (h *Handler) headsFragment(w http.ResponseWriter, r *http.Request) {
	rows, err := h.list(r.Context(), nil)
	if err != nil {
		h.fail(w, r, "heads", "", err)
		return
	}
	h.render(w, r, http.StatusOK, "headsfrag", "", rows)
}

// entry is one item of a head's timeline: a turn or a checkpoint.
type entry struct {
	At         time.Time
	Turn       *engine.Turn
	Checkpoint *grove.Checkpoint
	InTurn     int // the turn a checkpoint was taken in (0: none)
}

// headView is one head's page.
type headView struct {
	Row      headRow
	Timeline []entry
	At       grove.CheckpointID // the checkpoint whose diff is shown ("": none)
	Diff     []fileDiff         // its diff against its parent
	Cut      bool               // the diff was cut at maxDiffLines
	Live     liveView
	Split    bool // side by side (else inline)
	Log      []grove.Checkpoint
}

// liveView is the uncommitted work of a head.
type liveView struct {
	Files []fileDiff
	Cut   bool
	Split bool
	Err   string
}

// live reads the head's uncommitted work: its files now against the commit
// its status st says it is at (or the status's failure, stErr).
func live(ctx context.Context, hd *workspace.Head, st grove.Status, stErr string, split bool) liveView {
	v := liveView{Split: split, Err: stErr}
	if stErr != "" {
		return v
	}
	d, err := hd.Diff(ctx, grove.Rev(st.Commit), grove.Live)
	if err != nil {
		v.Err = err.Error()
		return v
	}
	v.Files, v.Cut = parsePatch(d.Patch)
	return v
}

func (h *Handler) head(w http.ResponseWriter, r *http.Request) {
	ctx, name := r.Context(), r.PathValue("name")
	rows, err := h.list(ctx, []string{name})
	if err != nil {
		h.fail(w, r, "head", name, err)
		return
	}
	v := headView{Row: rows[0].blank(), At: grove.CheckpointID(r.URL.Query().Get("at")), Split: r.URL.Query().Get("view") != "inline"}
	if v.Row.State == grove.StateArchived {
		h.render(w, r, http.StatusOK, "head", name, v)
		return
	}
	hd, err := h.readable(ctx, name)
	if err != nil {
		h.fail(w, r, "head", name, err)
		return
	}
	defer hd.Close()
	st := h.readHead(ctx, hd, &v.Row, true)
	if v.Log, err = hd.Log(ctx, &workspace.LogOptions{Limit: 200}); err != nil {
		h.fail(w, r, "log", name, err)
		return
	}
	v.Timeline = h.timeline(ctx, name, v.Log)
	if v.At != "" {
		i := slices.IndexFunc(v.Log, func(c grove.Checkpoint) bool { return c.ID == v.At })
		if i < 0 {
			h.fail(w, r, "diff", name, &grove.Error{Code: grove.NotFound, Op: "ui: diff", Head: name, Rev: grove.Rev(v.At), Err: grove.ErrNotFound})
			return
		}
		from := grove.Rev(v.Log[i].Parent)
		if from == "" {
			from = grove.Rev(v.Row.Base)
		}
		d, err := hd.Diff(ctx, from, grove.Rev(v.At))
		if err != nil {
			h.fail(w, r, "diff", name, err)
			return
		}
		v.Diff, v.Cut = parsePatch(d.Patch)
	}
	stErr := ""
	if st.Commit == "" { // the status failed
		stErr = v.Row.Err
	}
	v.Live = live(ctx, hd, st, stErr, v.Split)
	h.render(w, r, http.StatusOK, "head", name, v)
}

// timeline merges the head's checkpoints with the turns of the sessions
// bound to it, newest first.
func (h *Handler) timeline(ctx context.Context, name string, log []grove.Checkpoint) []entry {
	var out []entry
	in := map[grove.CheckpointID]int{}
	if h.o.Engine != nil {
		if all, err := h.o.Engine.Sessions(ctx); err == nil {
			root := h.o.Workspace.Info().Locator
			for _, s := range all {
				if s.Root != root || s.Head != name {
					continue
				}
				turns, err := h.o.Engine.Turns(ctx, s.ID)
				if err != nil {
					continue
				}
				for i := range turns {
					t := &turns[i]
					out = append(out, entry{At: t.Started, Turn: t})
					for _, id := range t.Checkpoints {
						in[id] = t.N
					}
				}
			}
		}
	}
	for i := range log {
		c := &log[i]
		out = append(out, entry{At: c.Time, Checkpoint: c, InTurn: in[c.ID]})
	}
	slices.SortStableFunc(out, func(a, b entry) int { return b.At.Compare(a.At) })
	return out
}

func (h *Handler) liveFragment(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	hd, err := h.readable(r.Context(), name)
	if err != nil {
		h.fail(w, r, "diff", name, err)
		return
	}
	defer hd.Close()
	stErr := ""
	st, err := hd.Status(r.Context())
	if err != nil {
		stErr = err.Error()
	}
	h.render(w, r, http.StatusOK, "livefrag", "", live(r.Context(), hd, st, stErr, r.URL.Query().Get("view") != "inline"))
}

func (h *Handler) patch(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	hd, err := h.readable(r.Context(), name)
	if err != nil {
		h.fail(w, r, "patch", name, err)
		return
	}
	defer hd.Close()
	out, err := hd.Patch(r.Context(), "", "", &workspace.PatchOptions{Squash: r.URL.Query().Get("squash") != ""})
	if err != nil {
		h.fail(w, r, "patch", name, err)
		return
	}
	w.Header().Set("Content-Type", "application/mbox")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.mbox"`)
	_, _ = w.Write(out)
}

// compareView compares heads: the files each changed since its base, where
// they overlap, and the diff between two of them.
type compareView struct {
	Heads   []headRow
	Files   []compareFile
	A, B    string // the pair whose diff is shown
	Diff    []fileDiff
	Cut     bool
	Split   bool
	Overlap int // files more than one head changed
}

// compareFile is one path and what each compared head did to it.
type compareFile struct {
	Path    string
	Cells   []*grove.FileStat // one per head, nil where it did not change the path
	Overlap bool
}

func (h *Handler) compare(w http.ResponseWriter, r *http.Request) {
	ctx, q := r.Context(), r.URL.Query()
	names := q["h"]
	if len(names) < 2 {
		h.fail(w, r, "compare", "", &grove.Error{Code: grove.InvalidArgument, Op: "ui: compare", Err: errors.New("choose two heads or more")})
		return
	}
	rows, err := h.list(ctx, names)
	if err != nil {
		h.fail(w, r, "compare", "", err)
		return
	}
	// A clean head's reading is the same in full; a dirty one's counts
	// leave its uncommitted lines out.
	h.read(ctx, rows, func(r headRow) bool { return r.Dirty || olderThan(fresh)(r) }, readers, true)
	// The page lists heads in the order the request named them.
	slices.SortFunc(rows, func(a, b headRow) int { return cmp.Compare(slices.Index(names, a.Name), slices.Index(names, b.Name)) })
	v := compareView{Heads: rows, A: q.Get("a"), B: q.Get("b"), Split: q.Get("view") != "inline"}
	if v.A == "" || v.B == "" {
		v.A, v.B = names[0], names[1]
	}
	byPath := map[string]*compareFile{}
	for i, row := range rows {
		for _, f := range row.Files {
			cf := byPath[f.Path]
			if cf == nil {
				cf = &compareFile{Path: f.Path, Cells: make([]*grove.FileStat, len(rows))}
				byPath[f.Path] = cf
			}
			cf.Cells[i] = &f
		}
	}
	for _, cf := range byPath {
		n := 0
		for _, c := range cf.Cells {
			if c != nil {
				n++
			}
		}
		if cf.Overlap = n > 1; cf.Overlap {
			v.Overlap++
		}
		v.Files = append(v.Files, *cf)
	}
	slices.SortFunc(v.Files, func(a, b compareFile) int { return cmp.Compare(a.Path, b.Path) })
	ia, ib := slices.IndexFunc(rows, func(r headRow) bool { return r.Name == v.A }), slices.IndexFunc(rows, func(r headRow) bool { return r.Name == v.B })
	if ia < 0 || ib < 0 {
		h.fail(w, r, "compare", "", &grove.Error{Code: grove.InvalidArgument, Op: "ui: compare", Err: errors.New("the pair to diff must be among the heads compared")})
		return
	}
	hd, err := h.readable(ctx, v.A)
	if err != nil {
		h.fail(w, r, "compare", v.A, err)
		return
	}
	defer hd.Close()
	d, err := hd.Diff(ctx, grove.Rev(rows[ia].Commit), grove.Rev(rows[ib].Commit))
	if err != nil {
		h.fail(w, r, "compare", v.A, err)
		return
	}
	v.Diff, v.Cut = parsePatch(d.Patch)
	h.render(w, r, http.StatusOK, "compare", "compare", v)
}

// repoName is how the page names a repository: its directory, for a
// locator that is the .git directory in it.
func repoName(locator string) string {
	if filepath.Base(locator) == ".git" {
		return filepath.Dir(locator)
	}
	return locator
}
