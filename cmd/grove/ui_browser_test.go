package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/githarness"
)

var (
	uiShots = flag.String("grove.ui.screenshots", "", "write screenshots of the page's main views to this directory")
	uiHeads = flag.Int("grove.ui.heads", 5, "heads in TestUIAtScale")
	uiFiles = flag.Int("grove.ui.files", 1000, "files in TestUIAtScale's repository")
)

// browser starts headless Chromium (Debian's chromium, which .ci/run
// installs) and returns a context to drive it with.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	require.NotEmpty(t, path, "no Chromium to test the page in: apt-get install chromium (.ci/run does)")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1400, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelCtx(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx)) // starts the browser
	return ctx
}

// startGrove starts the built grove in repo and returns its stdout; the
// test's end interrupts it and waits for it.
func startGrove(t *testing.T, repo, home string, args ...string) *bufio.Reader {
	t.Helper()
	c := exec.Command(groveBin, args...)
	c.Dir = repo
	c.Env = append(os.Environ(), "GROVE_HOME="+home)
	c.Stderr = os.Stderr
	stdout, err := c.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, c.Start())
	t.Cleanup(func() {
		_ = c.Process.Signal(os.Interrupt)
		_ = c.Wait()
	})
	return bufio.NewReader(stdout)
}

// serveUI starts grove ui on repo and returns the URL it printed.
func serveUI(t *testing.T, repo, home string) string {
	t.Helper()
	line, err := startGrove(t, repo, home, "ui", "--addr", "127.0.0.1:0").ReadString('\n')
	require.NoError(t, err)
	u := strings.TrimSpace(line)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+/[0-9a-f]{48}/$`, u)
	return u
}

// shoot saves a screenshot of the page as NAME.png under
// -grove.ui.screenshots, when it is set.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if *uiShots == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(*uiShots, name+".png"), png, 0o644))
}

// do runs steps that return nothing, within 30 s; when they fail, the
// page's address and text say where they stopped.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 3000)`))
		t.Fatalf("%v; the page was:\n%s", err, page)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err)
	return v
}

// text is the visible text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Text(sel))
	require.NoError(t, err)
	return v
}

// hostileName is a file name that is markup: rendered as HTML, its
// onerror would mark the page.
const hostileName = `<img src=x onerror="document.title='pwned';window.pwned=1">.txt`

// The page in a real browser: it lists the heads the command made, shows
// a checkpoint's diff with a hostile file name as text, follows an agent's
// writes without a reload, compares two heads, and lands one: the branch
// moves as grove land would move it.
func TestUIInABrowser(t *testing.T) {
	ctx := browser(t)
	root := t.TempDir()
	repo, home := filepath.Join(root, "repo"), filepath.Join(root, "home")
	require.NoError(t, githarness.InitRepo(ctx, repo, fstest.MapFS{
		"README.md":   {Data: []byte("# demo\n")},
		"src/main.go": {Data: []byte("package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n")},
	}))
	git := func(args ...string) string {
		out, err := githarness.Git(ctx, repo, args...)
		require.NoError(t, err)
		return strings.TrimSpace(out)
	}
	grove := func(args ...string) string {
		out, err := runGrove(t, repo, home, args...)
		require.NoError(t, err)
		return out
	}
	dir1, dir2 := grove("new", "agent-1"), grove("new", "agent-2")
	require.NoError(t, os.WriteFile(filepath.Join(dir1, "src", "main.go"), []byte("package main\n\nfunc main() {\n\tprintln(\"hello, world\")\n}\n"), 0o644))
	grove("checkpoint", "agent-1", "-m", "greet the world")
	grove("run", "agent-1", "--", "sh", "-c", "echo 'run by an agent' > run.txt")
	require.NoError(t, os.WriteFile(filepath.Join(dir2, hostileName), []byte("<script>document.title='pwned'</script>\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir2, "src", "main.go"), []byte("package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"), 0o644))
	cp2 := grove("checkpoint", "agent-2", "-m", "<b>bold</b> move")
	base := serveUI(t, repo, home)
	at := func(path string) string { return strings.TrimSuffix(base, "/") + path }

	// The overview lists both heads, then what they changed, as soon as
	// the page's refresher has read them.
	do(t, ctx, chromedp.Navigate(base), chromedp.WaitVisible(`tr[data-head="agent-2"]`),
		chromedp.WaitVisible(`tr[data-head="agent-1"] td.changed`), chromedp.WaitVisible(`tr[data-head="agent-2"] td.changed`))
	assert.Equal(t, 2, eval[int](t, ctx, `document.querySelectorAll("tr.head").length`))
	assert.Equal(t, "2", text(t, ctx, `tr[data-head="agent-1"] td.changed`))
	assert.Contains(t, text(t, ctx, `tr[data-head="agent-1"]`), "closed grove run")
	assert.Equal(t, "2", text(t, ctx, `tr[data-head="agent-2"] td.changed`))
	shoot(t, ctx, "overview")

	// A checkpoint's diff, side by side: the hostile name is text, and
	// nothing in it ran.
	do(t, ctx, chromedp.Navigate(at("/head/agent-2?at="+cp2)), chromedp.WaitVisible(`#checkpoint-diff .fname`))
	assert.Equal(t, []string{hostileName, "src/main.go"},
		eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#checkpoint-diff .fname .path"), e => e.textContent)`))
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll("main img, main script").length`), "agent text became markup")
	assert.False(t, eval[bool](t, ctx, `!!window.pwned`), "agent text ran as script")
	assert.NotContains(t, eval[string](t, ctx, `document.title`), "pwned")
	assert.Contains(t, text(t, ctx, `#checkpoint-diff .split td.code.del`), `println("hello")`)
	shoot(t, ctx, "head")

	// An agent writes: the live diff shows it without a reload.
	do(t, ctx, chromedp.Navigate(at("/head/agent-1")), chromedp.WaitVisible(`#live`))
	assert.Contains(t, text(t, ctx, `#timeline li.turn`), "turn 1")
	assert.Equal(t, 2, eval[int](t, ctx, `document.querySelectorAll("#timeline li.checkpoint").length`))
	eval[bool](t, ctx, `window.stayed = true`)
	require.NoError(t, os.WriteFile(filepath.Join(dir1, "notes.txt"), []byte("written by the agent\n"), 0o644))
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#live").textContent.includes("written by the agent")`,
		chromedp.WithPollingTimeout(30*time.Second)))
	require.NoError(t, err, "the live diff never showed the agent's write")
	assert.True(t, eval[bool](t, ctx, `window.stayed === true`), "the page reloaded")
	shoot(t, ctx, "live")

	// Two heads compared: each one's files, the one both changed, and the
	// diff between their latest checkpoints.
	do(t, ctx, chromedp.Navigate(base), chromedp.WaitVisible(`tr[data-head="agent-2"]`),
		chromedp.Click(`tr[data-head="agent-1"] input[type=checkbox]`),
		chromedp.Click(`tr[data-head="agent-2"] input[type=checkbox]`),
		chromedp.Click(`#compare-button`),
		chromedp.WaitVisible(`#compare`))
	assert.Equal(t, []string{"src/main.go"},
		eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#compare tr.overlap td.path"), e => e.textContent)`))
	pair := text(t, ctx, `#pair-diff`)
	assert.Contains(t, pair, hostileName)
	assert.Contains(t, pair, `println("hello, world")`)
	shoot(t, ctx, "compare")

	// Land agent-1: its uncommitted work is checkpointed first (the page
	// lands only reviewed work), then the dry run, then the branch moves.
	main := git("symbolic-ref", "--short", "HEAD")
	before := git("rev-parse", main)
	do(t, ctx, chromedp.Navigate(at("/head/agent-1")), chromedp.WaitVisible(`#land-button`),
		chromedp.Click(`#land-button`), chromedp.WaitVisible(`#blocked`),
		chromedp.Navigate(at("/head/agent-1")), chromedp.WaitVisible(`#checkpoint-button`),
		chromedp.SetValue(`form[action$="/checkpoint"] input[name=message]`, "notes"),
		chromedp.Click(`#checkpoint-button`), chromedp.WaitVisible(`#confirm-button`),
		chromedp.Click(`#confirm-button`), chromedp.WaitVisible(`#flash`))
	assert.Contains(t, text(t, ctx, `#flash`), "checkpoint ")
	do(t, ctx, chromedp.WaitVisible(`#land-button`),
		chromedp.Click(`#land-button`), chromedp.WaitVisible(`#dry-run`))
	assert.Contains(t, text(t, ctx, `#dry-run`), main)
	assert.Equal(t, before, git("rev-parse", main), "the dry run moved the branch")
	shoot(t, ctx, "land")
	do(t, ctx, chromedp.Click(`#confirm-button`), chromedp.WaitVisible(`#flash`))
	flash := text(t, ctx, `#flash`)
	after := git("rev-parse", main)
	assert.NotEqual(t, before, after)
	assert.Contains(t, flash, "landed on "+main+": "+after)
	assert.Equal(t, "written by the agent", git("show", main+":notes.txt"))

	// A failure reads as the command's: its code and message.
	do(t, ctx, chromedp.Navigate(at("/head/agent-2")), chromedp.WaitVisible(`#land-button`),
		chromedp.SetValue(`form[action$="/land"] input[name=onto]`, "no-such-branch"),
		chromedp.Click(`#land-button`), chromedp.WaitVisible(`#failure`))
	code, msg := text(t, ctx, `#code`), text(t, ctx, `#message`)
	_, cliErr := runGrove(t, repo, home, "land", "agent-2", "--onto", "no-such-branch", "--dry-run", "--json")
	require.Error(t, cliErr)
	assert.Contains(t, cliErr.Error(), `"code":"`+code+`"`)
	assert.Contains(t, msg, "no-such-branch")
}

// The overview of many heads and the comparison of five, in the browser:
// how long each takes to load (logged, not asserted). The first overview
// lists every head at once and shows their counts as the page's refresher
// reads them; the next one shows the readings the refresher keeps fresh;
// the comparison reads its dirty heads in full. -grove.ui.heads and -grove.ui.files set the
// size (50 and 10000 for the figures the docs give).
func TestUIAtScale(t *testing.T) {
	ctx := browser(t)
	root := t.TempDir()
	repo, home := filepath.Join(root, "repo"), filepath.Join(root, "home")
	files := fstest.MapFS{}
	for i := range *uiFiles {
		files[fmt.Sprintf("d%02d/f%05d.txt", i%100, i)] = &fstest.MapFile{Data: fmt.Appendf(nil, "file %d\n", i)}
	}
	require.NoError(t, githarness.InitRepo(ctx, repo, files))
	var names []string
	for i := range *uiHeads {
		name := fmt.Sprintf("agent-%02d", i)
		dir, err := runGrove(t, repo, home, "new", name)
		require.NoError(t, err)
		for j := range 3 {
			p := filepath.Join(dir, fmt.Sprintf("d%02d/f%05d.txt", (i+j)%100, (i*7+j)%*uiFiles))
			require.NoError(t, os.WriteFile(p, fmt.Appendf(nil, "changed by %s\n", name), 0o644))
		}
		names = append(names, name)
	}
	base := serveUI(t, repo, home)
	timed := func(what, url, sel string) {
		start := time.Now()
		do(t, ctx, chromedp.Navigate(url), chromedp.WaitVisible(sel))
		t.Logf("%s: %s (%d heads, %d files)", what, time.Since(start).Round(time.Millisecond), *uiHeads, *uiFiles)
	}
	last := `tr[data-head="` + names[len(names)-1] + `"]`
	timed("overview, first load: every head listed", base, last)
	start := time.Now()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`!document.querySelector("#heads").textContent.includes("reading…")`,
		chromedp.WithPollingTimeout(5*time.Minute)))
	require.NoError(t, err)
	t.Logf("overview, first load: every head's counts shown %s later", time.Since(start).Round(time.Millisecond))
	timed("overview, again (every head's counts)", base, last+` td.changed`)
	q := "compare?h=" + strings.Join(names[:min(5, len(names))], "&h=")
	timed("comparison of 5", base+q, `#compare`)
	assert.Positive(t, eval[int](t, ctx, `document.querySelectorAll("#compare tbody tr").length`))
}

// grove fanout runs one command in N new heads, reports each, and with
// --ui serves the comparison of them: the page shows every head and the
// file they all changed.
func TestFanoutOpensTheComparison(t *testing.T) {
	ctx := browser(t)
	root := t.TempDir()
	repo, home := filepath.Join(root, "repo"), filepath.Join(root, "home")
	require.NoError(t, githarness.InitRepo(ctx, repo, fstest.MapFS{"README.md": {Data: []byte("# demo\n")}}))
	r := startGrove(t, repo, home, "fanout", "3", "try", "--ui", "--", "sh", "-c", `echo "$GROVE_HEAD" >> README.md; echo done`)
	var lines []string
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err, "grove fanout printed %q", lines)
		lines = append(lines, strings.TrimSpace(line))
		if strings.HasPrefix(line, "http://") {
			break
		}
	}
	out := strings.Join(lines, "\n")
	for _, name := range []string{"try-1", "try-2", "try-3"} {
		assert.Contains(t, out, "["+name+"] done")
		assert.Regexp(t, `(?m)^`+name+` +0 +[0-9a-f]{12} `, out)
	}
	do(t, ctx, chromedp.Navigate(lines[len(lines)-1]), chromedp.WaitVisible(`#compare`))
	assert.Equal(t, []string{"try-1", "try-2", "try-3"},
		eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#compare thead tr:first-child th a"), e => e.textContent)`))
	assert.Equal(t, []string{"README.md"},
		eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#compare tr.overlap td.path"), e => e.textContent)`))
	assert.Contains(t, text(t, ctx, `#pair-diff`), "try-2")
}
