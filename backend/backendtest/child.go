package backendtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// childEnv carries a request to a child process of the suite.
const childEnv = "GROVE_BACKENDTEST_CHILD"

// childMarker starts the line on which a child reports its result.
const childMarker = "GROVE-BACKENDTEST-CHILD "

// What a child process is asked to do, through a new harness's backend.
const (
	childReopen  = "reopen"  // reopen a binding, then close it
	childRestore = "restore" // reopen a binding, restore its head to Rev discarding its work, close it; under umask 077 where there is one
)

type childRequest struct {
	Action  string `json:"action"`
	Binding []byte `json:"binding"`
	Rev     string `json:"rev,omitempty"`
}

// childResult is what a child reports: the code of its failure ("" when
// it succeeded) and the error's text.
type childResult struct {
	Code  string `json:"code"`
	Error string `json:"error"`
}

// child runs the test binary again as another process doing action with
// bind (and rev, for childRestore), and returns what it reported.
func (e *env) child(action string, bind grove.Binding, rev ...grove.Rev) childResult {
	e.t.Helper()
	data, err := bind.Encode()
	e.must(err, "Binding.Encode")
	r := childRequest{Action: action, Binding: data}
	if len(rev) > 0 {
		r.Rev = string(rev[0])
	}
	req, _ := json.Marshal(r)
	var pattern []string
	for _, part := range strings.Split(e.top, "/") {
		pattern = append(pattern, "^"+regexp.QuoteMeta(part)+"$")
	}
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+strings.Join(pattern, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+string(req))
	out, err := cmd.CombinedOutput()
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), childMarker); ok {
			var res childResult
			if json.Unmarshal([]byte(rest), &res) == nil {
				return res
			}
		}
	}
	e.fail("the child process (%s of %s) reported nothing (%v):\n%s", action, e.top, err, out)
	return childResult{}
}

// runChild is RunConformanceTests in a child process: it does what req
// asks and prints the outcome for the parent.
func runChild(t *testing.T, newHarness HarnessMaker, req string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	report := func(err error) {
		res := childResult{}
		if err != nil {
			res = childResult{Code: grove.CodeOf(err).String(), Error: err.Error()}
		}
		data, _ := json.Marshal(res)
		os.Stdout.WriteString(childMarker + string(data) + "\n")
	}
	var r childRequest
	if err := json.Unmarshal([]byte(req), &r); err != nil || r.Action != childReopen && r.Action != childRestore {
		t.Fatalf("backendtest: a child process got a request it cannot read: %q", req)
	}
	h, err := newHarness(ctx, t)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	defer h.Close()
	b, err := h.MakeBackend(ctx)
	if err != nil {
		t.Fatalf("MakeBackend: %v", err)
	}
	defer b.Close()
	bind, err := grove.DecodeBinding(r.Binding)
	if err != nil {
		t.Fatalf("DecodeBinding: %v", err)
	}
	if r.Action == childRestore {
		restrictUmask()
	}
	hd, err := workspace.Reopen(ctx, b, bind, nil)
	if err == nil && r.Action == childRestore {
		_, err = hd.Restore(ctx, grove.Rev(r.Rev), &workspace.RestoreOptions{Discard: true})
	}
	report(err)
	if hd != nil {
		_ = hd.Close()
	}
}
