package lfs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Remote is where Fetch gets LFS content: a repository's path or file://
// URL (its store is read directly, as git-lfs reads one), or the http(s)
// URL of a Git remote, whose LFS server is at <url>/info/lfs (a URL not
// ending in .git gets .git first), as git-lfs derives it. Header, when
// set, goes with every request to the LFS server (Authorization).
type Remote struct {
	URL    string
	Header http.Header
	// Client makes the HTTP requests; nil is http.DefaultClient.
	Client *http.Client
}

// maxBatchResponse bounds the LFS server's answer to one batch request.
const maxBatchResponse = 16 << 20

// Fetch puts the content of each of ptrs into store, from remote. Content
// that is not what its pointer names is never stored. It returns the
// pointers it could not fetch, each with why, and an error only when
// nothing could be asked (a bad URL, a server that does not answer as the
// batch API says).
func Fetch(ctx context.Context, remote Remote, ptrs []Pointer, store Store) (map[Pointer]error, error) {
	failed := map[Pointer]error{}
	if len(ptrs) == 0 {
		return failed, nil
	}
	u, err := url.Parse(remote.URL)
	if err != nil {
		return nil, fmt.Errorf("lfs: the remote %q is not a URL: %w", remote.URL, err)
	}
	switch {
	case u.Scheme == "file" || u.Scheme == "" && filepath.IsAbs(remote.URL):
		dir := remote.URL
		if u.Scheme == "file" {
			dir = u.Path
		}
		return fetchDir(ctx, dir, ptrs, store), nil
	case u.Scheme == "http" || u.Scheme == "https":
		return fetchHTTP(ctx, remote, u, ptrs, store)
	}
	return nil, fmt.Errorf("lfs: the remote %q is neither a path, a file:// URL nor an http(s) URL", remote.URL)
}

// fetchDir copies each object from the store of the repository at dir
// (a bare one, or a checkout with a .git directory).
func fetchDir(ctx context.Context, dir string, ptrs []Pointer, store Store) map[Pointer]error {
	common := filepath.Join(dir, ".git")
	if fi, err := os.Stat(common); err != nil || !fi.IsDir() {
		common = dir
	}
	from := StoreOf(common)
	failed := map[Pointer]error{}
	for _, p := range ptrs {
		if err := ctx.Err(); err != nil {
			failed[p] = err
			continue
		}
		if err := copyObject(from, p, store); err != nil {
			failed[p] = err
		}
	}
	return failed
}

// copyObject stores p's object from the store from (checked as it is
// copied: WriteTo checks its hash, PutWanted again).
func copyObject(from Store, p Pointer, store Store) error {
	tmp, err := os.CreateTemp("", "grove-lfs-fetch-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if _, err := from.WriteTo(p, tmp); err != nil {
		return err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return store.PutWanted(tmp, p)
}

// batchObject is an object of a batch request or response.
type batchObject struct {
	OID     string `json:"oid"`
	Size    int64  `json:"size"`
	Actions struct {
		Download *struct {
			Href   string            `json:"href"`
			Header map[string]string `json:"header"`
		} `json:"download"`
	} `json:"actions"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// mediaType is the batch API's content type.
const mediaType = "application/vnd.git-lfs+json"

// fetchHTTP asks the LFS server of the Git remote at u for download
// actions (the batch API, basic transfers) and downloads each object.
func fetchHTTP(ctx context.Context, remote Remote, u *url.URL, ptrs []Pointer, store Store) (map[Pointer]error, error) {
	client := remote.Client
	if client == nil {
		client = http.DefaultClient
	}
	endpoint := *u
	endpoint.Path = strings.TrimSuffix(endpoint.Path, "/")
	if !strings.HasSuffix(endpoint.Path, ".git") {
		endpoint.Path += ".git"
	}
	endpoint.Path += "/info/lfs/objects/batch"
	endpoint.RawPath = ""
	type req struct {
		Operation string        `json:"operation"`
		Transfers []string      `json:"transfers"`
		Objects   []batchObject `json:"objects"`
	}
	body := req{Operation: "download", Transfers: []string{"basic"}}
	for _, p := range ptrs {
		body.Objects = append(body.Objects, batchObject{OID: p.OID, Size: p.Size})
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint.String(), bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	for k, vs := range remote.Header {
		r.Header[k] = vs
	}
	r.Header.Set("Accept", mediaType)
	r.Header.Set("Content-Type", mediaType)
	resp, err := client.Do(r)
	if err != nil {
		return nil, fmt.Errorf("lfs: asking %s: %w", endpoint.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("lfs: %s answered %s", endpoint.Redacted(), resp.Status)
	}
	var answer struct {
		Transfer string        `json:"transfer"`
		Objects  []batchObject `json:"objects"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBatchResponse)).Decode(&answer); err != nil {
		return nil, fmt.Errorf("lfs: %s answered no batch response: %w", endpoint.Redacted(), err)
	}
	if answer.Transfer != "" && answer.Transfer != "basic" {
		return nil, fmt.Errorf("lfs: %s answered with the %q transfer, not basic", endpoint.Redacted(), answer.Transfer)
	}
	actions := map[Pointer]*batchObject{}
	for i := range answer.Objects {
		o := &answer.Objects[i]
		actions[Pointer{OID: o.OID, Size: o.Size}] = o
	}
	failed := map[Pointer]error{}
	for _, p := range ptrs {
		o := actions[p]
		switch {
		case o == nil:
			failed[p] = errors.New("the LFS server did not answer for it")
		case o.Error != nil:
			failed[p] = fmt.Errorf("the LFS server answered %d: %s", o.Error.Code, o.Error.Message)
		case o.Actions.Download == nil:
			failed[p] = errors.New("the LFS server gave no download for it")
		default:
			if err := download(ctx, client, o.Actions.Download.Href, o.Actions.Download.Header, p, store); err != nil {
				failed[p] = err
			}
		}
	}
	return failed, nil
}

// download gets p's content from href (the headers the server gave with
// it, and no other) into store.
func download(ctx context.Context, client *http.Client, href string, header map[string]string, p Pointer, store Store) error {
	hu, err := url.Parse(href)
	if err != nil || hu.Scheme != "http" && hu.Scheme != "https" {
		return fmt.Errorf("the LFS server's download link %q is not an http(s) URL", href)
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, href, nil)
	if err != nil {
		return err
	}
	for k, v := range header {
		r.Header.Set(k, v)
	}
	resp, err := client.Do(r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("downloading it: %s answered %s", hu.Redacted(), resp.Status)
	}
	return store.PutWanted(resp.Body, p)
}
