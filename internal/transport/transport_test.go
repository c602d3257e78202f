package transport

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
)

// ParseRemote takes the transports grove allows, each as the one its
// transfers may use, and refuses the rest with InvalidArgument; an http(s)
// URL's credentials leave the URL for a header.
func TestParseRemoteAllowsOnlyItsTransports(t *testing.T) {
	for url, scheme := range map[string]string{
		"/srv/repo.git":                 "file",
		"file:///srv/repo.git":          "file",
		"git://example.com/r.git":       "git",
		"ssh://git@example.com/r.git":   "ssh",
		"git@example.com:team/r.git":    "ssh",
		"https://example.com/r.git":     "https",
		"http://example.com:8080/r.git": "http",
	} {
		rm, err := ParseRemote("test", &grove.Remote{URL: url})
		require.NoError(t, err, url)
		assert.Equal(t, scheme, rm.Scheme, url)
		assert.Equal(t, url, rm.URL, url)
	}
	for _, url := range []string{"", "ext::sh -c touch% /tmp/pwned", "fd::3", "-upload-pack=touch x", "a\nb", "relative/path", "ftp://example.com/r.git"} {
		_, err := ParseRemote("test", &grove.Remote{URL: url})
		assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "%q: %v", url, err)
	}
	_, err := ParseRemote("test", &grove.Remote{URL: "/srv/r.git", Config: []string{"novalue"}})
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err))

	rm, err := ParseRemote("test", &grove.Remote{URL: "ssh://example.com/r.git"})
	require.NoError(t, err)
	assert.Contains(t, rm.args(), "core.sshCommand=ssh", "an ssh remote runs the system's ssh")
	assert.Equal(t, []string{"GIT_ALLOW_PROTOCOL=ssh"}, rm.env(), "its transport alone")

	rm, err = ParseRemote("test", &grove.Remote{URL: "https://me:s3cret@example.com/r.git"})
	require.NoError(t, err)
	assert.Equal(t, "https://example.com/r.git", rm.URL, "the credentials leave the URL")
	assert.Equal(t, "Authorization: Basic "+base64.StdEncoding.EncodeToString([]byte("me:s3cret")), rm.auth)
	for _, a := range rm.args() {
		assert.NotContains(t, a, "s3cret", "credentials on the command line")
	}
}

// A sparse set travels in a commit message and reads back as it was: the
// whole tree as no message, a set of no directory apart from it; any
// other message is no set.
func TestSparseMessagesRoundTrip(t *testing.T) {
	assert.Equal(t, "", SparseMessage(nil))
	for _, set := range [][]string{{}, {"src"}, {"a/b", "c"}} {
		got, ok := ParseSparseMessage(SparseMessage(set))
		require.True(t, ok, "%q", set)
		assert.Equal(t, set, got)
	}
	for _, bad := range []string{"", "grove owner\n", "grove sparse\nsrc\n", "grove sparse\n\nsrc\n", "grove sparse\n\ngrove-sparse: a\nother\n"} {
		_, ok := ParseSparseMessage(bad)
		assert.False(t, ok, "%q", bad)
	}
}
