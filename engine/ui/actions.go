package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// confirmView is the page that asks before an action: what it will do,
// and the form that does it.
type confirmView struct {
	Head, Action, Question string
	Fields                 url.Values
	Land                   *grove.LandResult // a land's dry run
	// Diff is what the land writes: the dry run's result against the
	// branch's tip (every commit of the head's branch, checkpoints or not).
	Diff  []fileDiff
	Cut   bool
	Split bool
	// Blocked says why the action cannot be confirmed as it stands.
	Blocked string
}

// act runs one of a head's actions: without confirm=yes it shows what the
// action will do (a land's dry run included) and asks; with it, it acts
// and returns to the page the action leaves.
func (h *Handler) act(w http.ResponseWriter, r *http.Request) {
	ctx, name, action := r.Context(), r.PathValue("name"), r.PathValue("action")
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, action, name, &grove.Error{Code: grove.InvalidArgument, Op: "ui: " + action, Head: name, Err: err})
		return
	}
	f := r.PostForm
	do, ok := actions[action]
	if !ok {
		http.NotFound(w, r)
		return
	}
	fields := url.Values{}
	for k, v := range f {
		if k != "confirm" {
			fields[k] = v
		}
	}
	if f.Get("confirm") != "yes" {
		v := confirmView{Head: name, Action: action, Question: do.ask(name, f), Fields: fields}
		if action == "land" {
			if err := h.dryRun(ctx, name, f, &v); err != nil {
				h.fail(w, r, "land", name, err)
				return
			}
		}
		h.render(w, r, http.StatusOK, "confirm", action+" "+name, v)
		return
	}
	done, err := do.run(ctx, h, name, f)
	h.cache.drop(name)
	if err != nil {
		h.fail(w, r, action, name, err)
		return
	}
	next := h.headURL(name, url.Values{"done": {done}})
	if action == "destroy" {
		next = h.base + "/?" + url.Values{"done": {done}}.Encode()
	}
	if action == "fork" {
		next = h.headURL(f.Get("new"), url.Values{"done": {done}})
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// action is one thing the page can do to a head: the question it asks
// first, and the library call it makes, which returns what to tell.
type action struct {
	ask func(name string, f url.Values) string
	run func(ctx context.Context, h *Handler, name string, f url.Values) (string, error)
}

var actions = map[string]action{
	"checkpoint": {
		ask: func(name string, _ url.Values) string {
			return fmt.Sprintf("Checkpoint head %q: commit its whole tree now?", name)
		},
		run: func(ctx context.Context, h *Handler, name string, f url.Values) (string, error) {
			return h.withHead(ctx, name, func(hd *workspace.Head) (string, error) {
				res, err := hd.Checkpoint(ctx, &workspace.CheckpointOptions{Message: f.Get("message")})
				if err != nil {
					return "", err
				}
				if !res.New {
					return "nothing new to checkpoint: the head is at " + string(res.ID), nil
				}
				return "checkpoint " + string(res.ID), nil
			})
		},
	},
	"restore": {
		ask: func(name string, f url.Values) string {
			if f.Get("discard") != "" {
				return fmt.Sprintf("Restore head %q to %s, throwing its uncommitted work away?", name, f.Get("rev"))
			}
			return fmt.Sprintf("Restore head %q to %s? Its uncommitted work is kept in a safety checkpoint first.", name, f.Get("rev"))
		},
		run: func(ctx context.Context, h *Handler, name string, f url.Values) (string, error) {
			return h.withHead(ctx, name, func(hd *workspace.Head) (string, error) {
				res, err := hd.Restore(ctx, grove.Rev(f.Get("rev")), &workspace.RestoreOptions{Discard: f.Get("discard") != ""})
				if err != nil {
					return "", err
				}
				msg := "restored to " + string(res.Commit)
				if res.Safety != nil && res.Safety.New {
					msg += "; safety checkpoint " + string(res.Safety.ID)
				}
				return msg, nil
			})
		},
	},
	"fork": {
		ask: func(name string, f url.Values) string {
			at := "its state now (uncommitted work included)"
			if f.Get("at") != "" {
				at = f.Get("at")
			}
			return fmt.Sprintf("Fork head %q from %s into a new isolated head %q?", name, at, f.Get("new"))
		},
		run: func(ctx context.Context, h *Handler, name string, f url.Values) (string, error) {
			return h.withHead(ctx, name, func(hd *workspace.Head) (string, error) {
				nh, err := hd.Fork(ctx, f.Get("new"), &workspace.ForkOptions{From: grove.Rev(f.Get("at"))})
				if err != nil {
					return "", err
				}
				defer nh.Close()
				return fmt.Sprintf("forked from %q into %s", name, nh.Info().Root), nil
			})
		},
	},
	"archive": {
		ask: func(name string, _ url.Values) string {
			return fmt.Sprintf("Archive head %q? The processes grove started in it are stopped, and it cannot be opened until it is unarchived.", name)
		},
		run: func(ctx context.Context, h *Handler, name string, _ url.Values) (string, error) {
			return "archived", h.o.Workspace.SetArchivedWith(ctx, name, true, nil)
		},
	},
	"unarchive": {
		ask: func(name string, _ url.Values) string { return fmt.Sprintf("Unarchive head %q?", name) },
		run: func(ctx context.Context, h *Handler, name string, _ url.Values) (string, error) {
			return "unarchived", h.o.Workspace.SetArchivedWith(ctx, name, false, nil)
		},
	},
	"destroy": {
		ask: func(name string, f url.Values) string {
			if f.Get("discard") != "" {
				return fmt.Sprintf("Destroy head %q, throwing its uncommitted work away? Its branch and checkpoints stay.", name)
			}
			return fmt.Sprintf("Destroy head %q? Its uncommitted work is kept in a final checkpoint; its branch and checkpoints stay.", name)
		},
		run: func(ctx context.Context, h *Handler, name string, f url.Values) (string, error) {
			return h.withHead(ctx, name, func(hd *workspace.Head) (string, error) {
				res, err := hd.Destroy(ctx, &workspace.DestroyOptions{Discard: f.Get("discard") != ""})
				if err != nil {
					return "", err
				}
				msg := fmt.Sprintf("destroyed head %q", name)
				if res.Final != nil && res.Final.New {
					msg += "; final checkpoint " + string(res.Final.ID)
				}
				return msg, nil
			})
		},
	},
	"land": {
		ask: func(name string, f url.Values) string {
			return fmt.Sprintf("Land head %q as the dry run below says?", name)
		},
		run: func(ctx context.Context, h *Handler, name string, f url.Values) (string, error) {
			o := landOptions(f)
			if o.Expect = grove.CheckpointID(f.Get("expect")); o.Expect == "" {
				return "", &grove.Error{Code: grove.InvalidArgument, Op: "ui: land", Head: name, Err: errors.New("no reviewed commit to land: start from the head's page")}
			}
			var res grove.LandResult
			_, err := h.withHead(ctx, name, func(hd *workspace.Head) (string, error) {
				var err error
				res, err = hd.Land(ctx, o)
				return "", err
			})
			if err != nil {
				return "", err
			}
			if len(res.Commits) == 0 {
				return "nothing to land: " + res.Onto + " has the head's work", nil
			}
			return fmt.Sprintf("landed on %s: %s", res.Branch, res.Commit), nil
		},
	},
}

// withHead runs f on the head called name, opened to change it.
func (h *Handler) withHead(ctx context.Context, name string, f func(*workspace.Head) (string, error)) (string, error) {
	hd, err := h.writable(ctx, name)
	if err != nil {
		return "", err
	}
	defer hd.Close()
	return f(hd)
}

// landOptions is the land the form asks for.
func landOptions(f url.Values) *workspace.LandOptions {
	return &workspace.LandOptions{Onto: f.Get("onto"), Strategy: grove.LandStrategy(f.Get("strategy")),
		Branch: f.Get("branch"), Message: f.Get("message")}
}

// dryRun fills a land's confirmation: the dry run, the diff of what it
// writes, and the commit the head is at, which the confirmed land must
// still find (what an agent writes or commits after this page is not
// landed unseen). A head with uncommitted work, which the dry run leaves
// out, is blocked.
func (h *Handler) dryRun(ctx context.Context, name string, f url.Values, v *confirmView) error {
	_, err := h.withHead(ctx, name, func(hd *workspace.Head) (string, error) {
		st, err := hd.Status(ctx)
		if err != nil {
			return "", err
		}
		o := landOptions(f)
		o.DryRun = true
		res, err := hd.Land(ctx, o)
		if err != nil {
			return "", err
		}
		v.Land = &res
		v.Fields.Set("expect", string(st.Commit))
		if res.Commit != res.Base {
			d, err := hd.Diff(ctx, grove.Rev(res.Base), grove.Rev(res.Commit))
			if err != nil {
				return "", err
			}
			v.Diff, v.Cut = parsePatch(d.Patch)
			v.Split = true
		}
		if st.Dirty {
			v.Blocked = "The head has uncommitted work, which this dry run leaves out: checkpoint it and review it first."
		}
		return "", nil
	})
	return err
}
