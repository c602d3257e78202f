// Package ui serves grove's review page: every head of one repository at a
// glance, one head's timeline of turns and checkpoints with their diffs and
// the live diff of its uncommitted work, a comparison of heads, and the
// actions a reviewer takes (checkpoint, restore, fork, archive, destroy,
// land, patch download).
//
// Invariants:
//
//   - Every value the page shows and every action it takes is a call of the
//     workspace and engine APIs the grove command makes, with the same typed
//     errors, shown by code and message; the handler adds presentation only
//     (a diff's rendering, a comparison's overlap) and a cache of each
//     head's last reading, which a refresher it owns keeps fresh while the
//     page is watched (Close stops it).
//   - Everything a head holds (names, paths, messages, diffs, prompts) is
//     text the agent wrote: it reaches the page only through html/template's
//     contextual escaping, and the page's Content-Security-Policy runs no
//     script but the one the binary embeds, so a file that tries to inject
//     markup renders as text; characters that would not show as themselves
//     (a bidirectional override) are shown as escapes.
//   - Every request needs the token, the first element of every path
//     (/TOKEN/...): the URL grove ui prints has it, and a browser sends a
//     path to no other server (a cookie would go to every port of the
//     host). Writes are POSTs from the page's own origin, and a Host header
//     that is not a loopback name is refused (DNS rebinding).
//   - Every action asks for confirmation first: a page that says what will
//     happen (for a land, the dry run's result and diff, or its conflicts),
//     whose button repeats the request with confirm=yes. A land confirmed
//     lands the commit the dry run was made from or nothing
//     (workspace.LandOptions.Expect).
//   - The page fetches nothing from elsewhere: its script and style are
//     embedded in the binary. The script only swaps in HTML the server
//     rendered (the live diff, the list of heads) when it changes.
package ui

import (
	"bytes"
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/internal/shown"
	"github.com/groveworks/grove/workspace"
)

//go:embed assets
var assets embed.FS

// Options configure New.
type Options struct {
	// Workspace is the repository whose heads the page shows. Required.
	Workspace *workspace.Workspace
	// Engine, when set, gives each head its sessions and each timeline
	// its turns; without it the page shows heads and checkpoints only.
	Engine *engine.Engine
	// Token is the secret every request's path starts with: at least 16
	// bytes, with no '/', '?', '#' or '%'.
	Token string
	// Wait is how long an action waits for an isolated head another
	// grove command holds, as the command's --wait (0: not at all).
	Wait time.Duration
	// Poll is how often the page asks for what changed (default 1 s).
	Poll time.Duration
}

// ErrNoToken is returned by New for a token shorter than 16 bytes or with
// a character that cannot stand in a path as it is ('/', '?', '#', '%').
var ErrNoToken = errors.New("ui: the token must be at least 16 bytes, with no '/', '?', '#' or '%'")

// Handler serves the review page. Make one with New.
type Handler struct {
	o     Options
	base  string // "/" and the token: where every path of the page starts
	mux   *http.ServeMux
	pages *template.Template
	cache cache
}

// New returns the handler of the review page for o.Workspace. Close it
// when done: it reads the heads in the background while the page is
// watched.
func New(o Options) (*Handler, error) {
	if o.Workspace == nil {
		return nil, errors.New("ui: no workspace")
	}
	if len(o.Token) < 16 || strings.ContainsAny(o.Token, "/?#%") {
		return nil, ErrNoToken
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	h := &Handler{o: o, base: "/" + o.Token, mux: http.NewServeMux()}
	pages, err := template.New("").Funcs(h.funcs()).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, err
	}
	h.pages = pages
	static, _ := fs.Sub(assets, "assets/static")
	h.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	h.mux.HandleFunc("GET /{$}", h.overview)
	h.mux.HandleFunc("GET /frag/heads", h.headsFragment)
	h.mux.HandleFunc("GET /head/{name}", h.head)
	h.mux.HandleFunc("GET /frag/live/{name}", h.liveFragment)
	h.mux.HandleFunc("GET /head/{name}/patch", h.patch)
	h.mux.HandleFunc("GET /compare", h.compare)
	h.mux.HandleFunc("POST /head/{name}/{action}", h.act)
	h.cache.start(h, o.Poll)
	return h, nil
}

// Close stops the handler's background reading of the heads and waits for
// it. The workspace and the engine stay open.
func (h *Handler) Close() error {
	h.cache.stop()
	return nil
}

// ServeHTTP checks the request's host and token, then serves it. The
// token is the first element of every path (/TOKEN/head/NAME): a browser
// sends a path to no other server, where a cookie would go to every port
// of the host (a dev server an agent runs, for one).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
	if !loopbackHost(r.Host) {
		http.Error(w, "grove ui answers on a loopback address only", http.StatusForbidden)
		return
	}
	tok, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if subtle.ConstantTimeCompare([]byte(tok), []byte(h.o.Token)) != 1 {
		http.Error(w, "grove ui: open the URL grove ui printed (it carries the page's token)", http.StatusUnauthorized)
		return
	}
	if p, c := "/"+rest, path.Clean("/"+rest); c != p && c+"/" != p {
		// ServeMux would redirect to the clean path without the token.
		http.NotFound(w, r)
		return
	}
	if r.Method == http.MethodPost {
		site := r.Header.Get("Sec-Fetch-Site")
		if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host || site != "" && site != "same-origin" {
			http.Error(w, "grove ui: a form from another origin", http.StatusForbidden)
			return
		}
	}
	h.cache.touch()
	r2 := new(http.Request)
	*r2 = *r
	r2.URL = new(url.URL)
	*r2.URL = *r.URL
	r2.URL.Path, r2.URL.RawPath = "/"+rest, ""
	h.mux.ServeHTTP(w, r2)
}

// loopbackHost reports whether a Host header names this machine by a
// loopback address or "localhost".
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// page is what every page's template gets besides its own data.
type page struct {
	Title string
	Poll  int // milliseconds
	Flash string
	Data  any
}

// render writes the template name with data, or an error page when it
// fails before anything was written.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	var buf bytes.Buffer
	p := page{Title: title, Poll: int(h.o.Poll / time.Millisecond), Flash: r.URL.Query().Get("done"), Data: data}
	if err := h.pages.ExecuteTemplate(&buf, name, p); err != nil {
		http.Error(w, "grove ui: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// failure is an error as the page shows it: the code's name and the
// message, as the command prints them.
type failure struct {
	Op, Head, Code, Message string
	Conflicts               []string
}

// fail renders err on an error page with a status that fits its code.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, op, head string, err error) {
	code := grove.CodeOf(err)
	f := failure{Op: op, Head: head, Code: code.Name(), Message: err.Error()}
	var lc *grove.LandConflict
	if errors.As(err, &lc) {
		f.Conflicts = lc.Paths
	}
	status := http.StatusInternalServerError
	switch code {
	case grove.InvalidArgument:
		status = http.StatusBadRequest
	case grove.NotFound:
		status = http.StatusNotFound
	case grove.Conflict, grove.AlreadyBound, grove.AlreadyExists, grove.FailedPrecondition:
		status = http.StatusConflict
	case grove.Canceled:
		status = 499
	}
	h.render(w, r, status, "error", op+" failed", f)
}

// writable opens the head called name to change it, waiting for another
// grove command's hold up to Options.Wait.
func (h *Handler) writable(ctx context.Context, name string) (*workspace.Head, error) {
	return h.o.Workspace.OpenHead(ctx, name, &workspace.ReopenOptions{Wait: h.o.Wait})
}

// readable opens the head called name without a lock.
func (h *Handler) readable(ctx context.Context, name string) (*workspace.Head, error) {
	return h.o.Workspace.OpenHead(ctx, name, &workspace.ReopenOptions{ReadOnly: true})
}

// headURL is the page of the head called name.
func (h *Handler) headURL(name string, q url.Values) string {
	u := url.URL{Path: h.base + "/head/" + name, RawPath: h.base + "/head/" + url.PathEscape(name), RawQuery: q.Encode()}
	return u.String()
}

// funcs are the templates' functions.
func (h *Handler) funcs() template.FuncMap {
	return template.FuncMap{
		"base":  func() string { return h.base },
		"shown": shown.Printable,
		"short": func(id grove.CheckpointID) string {
			if len(id) > 10 {
				return string(id[:10])
			}
			return string(id)
		},
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return t.Local().Format("2006-01-02 15:04:05")
		},
		"headURL": func(name string) string { return h.headURL(name, nil) },
		"subject": func(msg string) string {
			s, _, _ := strings.Cut(msg, "\n")
			return s
		},
		"diffOf": func(files []fileDiff, cut, split bool) diffArgs {
			return diffArgs{Files: files, Cut: cut, Split: split}
		},
	}
}

// diffArgs is what the "diff" template renders.
type diffArgs struct {
	Files []fileDiff
	Cut   bool
	Split bool
}
