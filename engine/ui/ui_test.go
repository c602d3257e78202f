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
	client *http.Client // carries the token's cookie, follows no redirect
	csrf   string
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
	f := &fixture{t: t, ws: ws, srv: httptest.NewServer(handler)}
	t.Cleanup(f.srv.Close)
	f.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := f.client.Get(f.srv.URL + "/?token=" + token)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	f.client.Jar = jar{cookies[0]}
	page := f.get("/head/h", http.StatusOK)
	i := strings.Index(page, `name="csrf" value="`)
	require.Positive(t, i)
	f.csrf = page[i+len(`name="csrf" value="`):][:32]
	return f
}

// jar is a cookie jar of one cookie.
type jar []*http.Cookie

func (j jar) SetCookies(*url.URL, []*http.Cookie) {}
func (j jar) Cookies(*url.URL) []*http.Cookie     { return j }

func (f *fixture) get(path string, status int) string {
	f.t.Helper()
	resp, err := f.client.Get(f.srv.URL + path)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	require.Equal(f.t, status, resp.StatusCode, b.String())
	return b.String()
}

func (f *fixture) post(path string, form url.Values, header http.Header) *http.Response {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form.Encode()))
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

// Nothing is served without the token: the URL's token is traded for a
// strict, script-proof cookie and taken out of the address.
func TestEveryRequestNeedsTheToken(t *testing.T) {
	f := newFixture(t)
	anon := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/", "/head/h", "/frag/heads", "/frag/live/h", "/head/h/patch", "/compare?h=h&h=h", "/static/app.js", "/?token=wrong-wrong-wrong-wrong"} {
		resp, err := anon.Get(f.srv.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
	}
	resp, err := anon.Get(f.srv.URL + "/head/h?token=" + token + "&view=inline")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "/head/h?view=inline", resp.Header.Get("Location"))
	c := resp.Cookies()[0]
	assert.True(t, c.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
	assert.Contains(t, f.get("/", http.StatusOK), `data-head="h"`)
}

// A write needs the page's own form: one without the form value, one
// from another origin or site, and one through a host name that is not
// loopback (DNS rebinding) are refused, and change nothing.
func TestAFormFromElsewhereChangesNothing(t *testing.T) {
	f := newFixture(t)
	ok := url.Values{"csrf": {f.csrf}, "confirm": {"yes"}}
	for name, c := range map[string]struct {
		form   url.Values
		header http.Header
	}{
		"no form value":    {url.Values{"confirm": {"yes"}}, nil},
		"wrong form value": {url.Values{"csrf": {strings.Repeat("0", 32)}, "confirm": {"yes"}}, nil},
		"other origin":     {ok, http.Header{"Origin": {"http://evil.example"}}},
		"cross site":       {ok, http.Header{"Sec-Fetch-Site": {"cross-site"}}},
		"rebound host":     {ok, http.Header{"Host": {"evil.example"}}},
	} {
		req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/head/h/checkpoint", strings.NewReader(c.form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range c.header {
			req.Header[k] = v
		}
		if h := c.header.Get("Host"); h != "" {
			req.Host = h
		}
		resp, err := f.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, name)
	}
	assert.Zero(t, f.checkpoints())
	resp := f.post("/head/h/checkpoint", ok, nil)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, 1, f.checkpoints())
}

// An action asks first, and does nothing until confirmed; its failure is
// the library's typed error.
func TestAnActionAsksFirst(t *testing.T) {
	f := newFixture(t)
	resp := f.post("/head/h/destroy", url.Values{"csrf": {f.csrf}, "discard": {"1"}}, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	f.get("/head/h", http.StatusOK) // still there
	resp = f.post("/head/h/restore", url.Values{"csrf": {f.csrf}, "rev": {"no-such-rev"}, "confirm": {"yes"}}, nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp = f.post("/head/h/destroy", url.Values{"csrf": {f.csrf}, "discard": {"1"}, "confirm": {"yes"}}, nil)
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
	require.NoError(t, h.Close())
	for _, path := range []string{"/", "/frag/heads", "/head/h", "/head/h?at=" + string(cp.ID), "/head/h?view=inline&at=" + string(cp.ID), "/frag/live/h", "/compare?h=h&h=h"} {
		body := f.get(path, http.StatusOK)
		for _, bad := range []string{"<img", "<script>alert", "<svg", "</title><"} {
			assert.NotContains(t, body, bad, path)
		}
	}
	assert.Contains(t, f.get("/head/h?at="+string(cp.ID), http.StatusOK), "&lt;img src=x onerror=alert(1)&gt;.txt")
}
