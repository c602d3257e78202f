package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend/backendutil"
)

func schema(s string) json.RawMessage { return json.RawMessage(s) }

// isBinary decides as git does: a NUL byte in the first 8000 bytes.
func isBinary(data []byte) bool { return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 }

// readLimited reads a file of at most maxFileSize bytes, with its digest.
func readLimited(pl place) ([]byte, grove.Digest, error) {
	fi, err := pl.fs.Stat(pl.name)
	if err != nil {
		return nil, grove.Digest{}, err
	}
	if fi.IsDir() {
		return nil, grove.Digest{}, &Error{Code: grove.FailedPrecondition, Message: pl.show(pl.name) + " is a directory; use list_dir"}
	}
	if fi.Size() > maxFileSize {
		return nil, grove.Digest{}, &Error{Code: grove.FailedPrecondition,
			Message: fmt.Sprintf("%s is %d bytes, more than the %d these tools read; use grep to find what you need in it", pl.show(pl.name), fi.Size(), maxFileSize)}
	}
	return pl.fs.ReadFileDigest(pl.name)
}

func readFileTool() Tool {
	return Tool{
		Name:        "read_file",
		Description: `Read a text file. Returns its lines numbered from 1 (a tab after each number), at most "limit" lines from line "offset", and the content's digest. Paths are under /workspace (or relative to it). A binary file is reported, not printed. Read a file before writing or editing it.`,
		InputSchema: schema(`{"type":"object","properties":{
"path":{"type":"string","description":"the file, such as /workspace/src/main.go"},
"offset":{"type":"integer","minimum":1,"description":"the first line to return (default 1)"},
"limit":{"type":"integer","minimum":1,"description":"how many lines to return (default 2000)"}},
"required":["path"],"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			var in struct {
				Path   string `json:"path"`
				Offset int    `json:"offset"`
				Limit  int    `json:"limit"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			if in.Offset < 0 || in.Limit < 0 || in.Offset > 1<<30 || in.Limit > 1<<30 {
				return "", &Error{Code: grove.InvalidArgument, Message: "offset and limit are positive line counts"}
			}
			pl, err := t.resolve(in.Path)
			if err != nil {
				return "", err
			}
			data, digest, err := readLimited(pl)
			if err != nil {
				return "", err
			}
			shown := pl.show(pl.name)
			t.remember(shown, digest)
			if isBinary(data) {
				return fmt.Sprintf("%s: a binary file of %d bytes (digest %s); not shown\n", shown, len(data), digest), nil
			}
			lines := strings.SplitAfter(string(data), "\n")
			if lines[len(lines)-1] == "" {
				lines = lines[:len(lines)-1]
			}
			first, limit := max(in.Offset, 1), in.Limit
			if limit == 0 {
				limit = 2000
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s: %d lines, digest %s\n", shown, len(lines), digest)
			last := min(len(lines), first-1+limit)
			for i := first - 1; i < last; i++ {
				line := strings.TrimRight(lines[i], "\n")
				if len(line) > 2000 {
					line = line[:2000] + " [line cut]"
				}
				fmt.Fprintf(&b, "%6d\t%s\n", i+1, line)
			}
			if last < len(lines) {
				fmt.Fprintf(&b, "[lines %d to %d of %d shown; read on with offset %d]\n", first, last, len(lines), last+1)
			}
			return b.String(), nil
		},
	}
}

// write writes data at pl, compare-and-set against expect, making the
// parent directory, and remembers what it wrote.
func (t *Set) write(pl place, data []byte, expect grove.Digest) error {
	if dir := path.Dir(pl.name); dir != "." {
		if err := pl.fs.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := pl.fs.WriteFileIf(pl.name, data, 0o644, expect); err != nil {
		if grove.CodeOf(err) == grove.Conflict {
			t.forgetPath(pl.show(pl.name))
		}
		return err
	}
	t.remember(pl.show(pl.name), grove.DigestOf(data))
	return nil
}

func writeFileTool() Tool {
	return Tool{
		Name:        "write_file",
		Description: `Write a whole file, creating it (and its directories) or replacing it. To replace a file that exists, read it with read_file first: the write fails if the file changed since you read it. Prefer edit_file for changes to part of a file.`,
		InputSchema: schema(`{"type":"object","properties":{
"path":{"type":"string","description":"the file, such as /workspace/src/main.go"},
"content":{"type":"string","description":"the file's whole new content"}},
"required":["path","content"],"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			var in struct {
				Path    *string `json:"path"`
				Content *string `json:"content"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			if in.Path == nil || in.Content == nil {
				return "", &Error{Code: grove.InvalidArgument, Message: "path and content are both required"}
			}
			pl, err := t.resolve(*in.Path)
			if err != nil {
				return "", err
			}
			shown := pl.show(pl.name)
			var expect grove.Digest // zero: must not exist
			if _, err := pl.fs.Lstat(pl.name); err == nil {
				d, ok := t.lastRead(shown)
				if !ok {
					return "", &Error{Code: grove.FailedPrecondition, Message: shown + " exists and you have not read it; call read_file first, then write"}
				}
				expect = d
			}
			if err := t.write(pl, []byte(*in.Content), expect); err != nil {
				return "", err
			}
			return fmt.Sprintf("wrote %s (%d bytes)\n", shown, len(*in.Content)), nil
		},
	}
}

func editFileTool() Tool {
	return Tool{
		Name:        "edit_file",
		Description: `Replace exact text in a file: old_string must occur exactly once (or set replace_all to replace every occurrence); whitespace and indentation count. The edit fails, changing nothing, if the file changed since you last read it: read it again, then retry.`,
		InputSchema: schema(`{"type":"object","properties":{
"path":{"type":"string","description":"the file, such as /workspace/src/main.go"},
"old_string":{"type":"string","description":"the exact text to replace"},
"new_string":{"type":"string","description":"the text to put in its place"},
"replace_all":{"type":"boolean","description":"replace every occurrence (default false)"}},
"required":["path","old_string","new_string"],"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			var in struct {
				Path       *string `json:"path"`
				Old        *string `json:"old_string"`
				New        *string `json:"new_string"`
				ReplaceAll bool    `json:"replace_all"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			if in.Path == nil || in.Old == nil || in.New == nil {
				return "", &Error{Code: grove.InvalidArgument, Message: "path, old_string and new_string are required"}
			}
			if *in.Old == "" {
				return "", &Error{Code: grove.InvalidArgument, Message: "old_string is empty; to write a whole file use write_file"}
			}
			if *in.Old == *in.New {
				return "", &Error{Code: grove.InvalidArgument, Message: "old_string and new_string are the same; nothing to change"}
			}
			pl, err := t.resolve(*in.Path)
			if err != nil {
				return "", err
			}
			shown := pl.show(pl.name)
			data, digest, err := readLimited(pl)
			if err != nil {
				return "", err
			}
			if d, ok := t.lastRead(shown); ok && d != digest {
				// The model has not seen this content: it must read it
				// before writing or editing again.
				t.forgetPath(shown)
				return "", &Error{Code: grove.Conflict, Message: shown + " changed since you last read it; call read_file again, then retry the edit"}
			}
			if isBinary(data) {
				return "", &Error{Code: grove.FailedPrecondition, Message: shown + " is a binary file; edit_file edits text"}
			}
			n := strings.Count(string(data), *in.Old)
			switch {
			case n == 0:
				return "", &Error{Code: grove.NotFound, Message: "old_string does not occur in " + shown + "; read the file and copy the text exactly, whitespace included"}
			case n > 1 && !in.ReplaceAll:
				return "", &Error{Code: grove.InvalidArgument, Message: fmt.Sprintf("old_string occurs %d times in %s; add surrounding lines to make it unique, or set replace_all", n, shown)}
			}
			out := strings.Replace(string(data), *in.Old, *in.New, map[bool]int{true: -1, false: 1}[in.ReplaceAll])
			if err := t.write(pl, []byte(out), digest); err != nil {
				return "", err
			}
			return fmt.Sprintf("edited %s: %d replacement(s)\n", shown, map[bool]int{true: n, false: 1}[in.ReplaceAll]), nil
		},
	}
}

func listDirTool() Tool {
	return Tool{
		Name:        "list_dir",
		Description: `List a directory: one entry a line, directories ending in "/", symlinks as "name -> target". Paths are under /workspace; the session's extra roots are under /workspace/roots.`,
		InputSchema: schema(`{"type":"object","properties":{
"path":{"type":"string","description":"the directory (default /workspace)"}},
"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			var in struct {
				Path string `json:"path"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			if in.Path == "" {
				in.Path = Mount
			}
			pl, err := t.resolve(in.Path)
			if err != nil {
				return "", err
			}
			var lines []string
			if pl.roots {
				for _, r := range t.roots {
					lines = append(lines, r+"/")
				}
			}
			if pl.fs != nil {
				ents, err := pl.fs.ReadDir(pl.name)
				if err != nil && !(pl.roots && grove.CodeOf(err) == grove.NotFound) {
					return "", err
				}
				for _, e := range ents {
					name := e.Name()
					switch {
					case pl.roots && containsString(t.roots, name):
						continue // the root hides the head's entry of that name
					case e.IsDir():
						name += "/"
					case e.Type()&fs.ModeSymlink != 0:
						if target, err := pl.fs.ReadLink(path.Join(pl.name, name)); err == nil {
							if strings.HasPrefix(target, "/") {
								target = "(a link out of " + Mount + ")"
							}
							name += " -> " + target
						}
					}
					lines = append(lines, name)
				}
			}
			sort.Strings(lines)
			if len(lines) == 0 {
				return pl.show(pl.name) + ": empty\n", nil
			}
			return pl.show(pl.name) + ":\n" + strings.Join(lines, "\n") + "\n", nil
		},
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// walk visits the files under pl (skipping what .gitignore files ignore,
// when skipIgnored), calling visit with each file's FS name, until visit
// says stop.
func walk(ctx context.Context, pl place, roots []string, skipIgnored bool, visit func(name string, d fs.DirEntry) (stop bool)) error {
	var ig backendutil.Ignore
	err := fs.WalkDir(pl.fs, pl.name, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name == pl.name {
				return err
			}
			return nil // an entry the policy or the FS refuses: not listed
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if name != pl.name && skipIgnored && ig.Ignored(name, true) {
				return fs.SkipDir
			}
			// The head's own roots/<name> is hidden by the mounted root of
			// that name: the namespace shows the root there.
			if pl.top == Mount && shadowed(name, roots) {
				return fs.SkipDir
			}
			if skipIgnored {
				if data, err := pl.fs.ReadFile(path.Join(name, ".gitignore")); err == nil {
					ig.AddGitignore(name, data)
				}
			}
			return nil
		}
		if !d.Type().IsRegular() || (skipIgnored && ig.Ignored(name, false)) {
			return nil
		}
		if visit(name, d) {
			return fs.SkipAll
		}
		return nil
	})
	return err
}

// searchBase resolves where glob and grep search: p, or /workspace.
func (t *Set) searchBase(p string) (place, error) {
	if p == "" {
		p = Mount
	}
	pl, err := t.resolve(p)
	if err == nil && pl.roots {
		err = &Error{Code: grove.InvalidArgument, Message: "search a root by its own path, such as " + Mount + "/roots/<name>"}
	}
	return pl, err
}

// shadowed reports whether the head's directory name is roots/<r> for a
// mounted root r.
func shadowed(name string, roots []string) bool {
	rest, ok := strings.CutPrefix(name, "roots/")
	return ok && !strings.Contains(rest, "/") && containsString(roots, rest)
}

// globRegexp compiles a glob: "*" and "?" within a path element, "**" any
// number of elements, "[...]" a class, as gitignore-style globs read.
func globRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case strings.HasPrefix(pattern[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(pattern[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			j := strings.IndexByte(pattern[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("an unclosed [ in %q", pattern)
			}
			class := pattern[i+1 : i+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + class + "]")
			i += j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

func globTool() Tool {
	return Tool{
		Name:        "glob",
		Description: `Find files by name pattern: "*" matches within a path element, "**" across directories (such as "**/*.go" or "src/**/test_*.py"). Patterns are relative to "path" (default /workspace). Files .gitignore ignores are skipped. Returns at most 500 paths, sorted.`,
		InputSchema: schema(`{"type":"object","properties":{
"pattern":{"type":"string","description":"the glob, such as **/*.go"},
"path":{"type":"string","description":"the directory to search (default /workspace)"}},
"required":["pattern"],"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			var in struct {
				Pattern string `json:"pattern"`
				Path    string `json:"path"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			re, err := globRegexp(strings.TrimPrefix(in.Pattern, "/"))
			if err != nil || in.Pattern == "" {
				return "", &Error{Code: grove.InvalidArgument, Message: fmt.Sprintf("pattern %q is not a glob", in.Pattern)}
			}
			pl, err := t.searchBase(in.Path)
			if err != nil {
				return "", err
			}
			const most = 500
			var found []string
			more := false
			err = walk(ctx, pl, t.roots, true, func(name string, _ fs.DirEntry) bool {
				rel := strings.TrimPrefix(strings.TrimPrefix(name, pl.name), "/")
				if pl.name == "." {
					rel = name
				}
				if re.MatchString(rel) {
					if len(found) == most {
						more = true
						return true
					}
					found = append(found, pl.show(name))
				}
				return false
			})
			if err != nil {
				return "", err
			}
			sort.Strings(found)
			if len(found) == 0 {
				return "no files match\n", nil
			}
			out := strings.Join(found, "\n") + "\n"
			if more {
				out += fmt.Sprintf("[the first %d matches; narrow the pattern]\n", most)
			}
			return out, nil
		},
	}
}

func grepTool() Tool {
	return Tool{
		Name:        "grep",
		Description: `Search file contents with a regular expression (RE2 syntax). Returns "path:line: text" for each matching line, at most 200 matches. "glob" limits the files searched (such as "**/*.go"); binary files, files over 8 MiB and files .gitignore ignores are skipped.`,
		InputSchema: schema(`{"type":"object","properties":{
"pattern":{"type":"string","description":"the regular expression"},
"path":{"type":"string","description":"the directory or file to search (default /workspace)"},
"glob":{"type":"string","description":"only files whose path matches this glob (without a slash: whose name matches it)"},
"ignore_case":{"type":"boolean","description":"match regardless of case"}},
"required":["pattern"],"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			var in struct {
				Pattern    string `json:"pattern"`
				Path       string `json:"path"`
				Glob       string `json:"glob"`
				IgnoreCase bool   `json:"ignore_case"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			expr := in.Pattern
			if in.IgnoreCase {
				expr = "(?i)" + expr
			}
			re, err := regexp.Compile(expr)
			if err != nil || in.Pattern == "" {
				return "", &Error{Code: grove.InvalidArgument, Message: fmt.Sprintf("pattern %q is not a regular expression: %v", in.Pattern, err)}
			}
			var only *regexp.Regexp
			if in.Glob != "" {
				if only, err = globRegexp(in.Glob); err != nil {
					return "", &Error{Code: grove.InvalidArgument, Message: fmt.Sprintf("glob %q: %v", in.Glob, err)}
				}
			}
			pl, err := t.searchBase(in.Path)
			if err != nil {
				return "", err
			}
			const most = 200
			var b strings.Builder
			n := 0
			search := func(name string, d fs.DirEntry) bool {
				rel := name
				if pl.name != "." {
					rel = strings.TrimPrefix(strings.TrimPrefix(name, pl.name), "/")
					if rel == "" {
						rel = path.Base(name)
					}
				}
				// A glob without a slash matches a file's name at any depth.
				if only != nil && !only.MatchString(rel) && (strings.Contains(in.Glob, "/") || !only.MatchString(path.Base(rel))) {
					return false
				}
				var fi fs.FileInfo
				var err error
				if d != nil {
					fi, err = d.Info()
				} else {
					fi, err = pl.fs.Stat(name)
				}
				if err != nil || fi.Size() > maxFileSize {
					return false
				}
				data, err := pl.fs.ReadFile(name)
				if err != nil || isBinary(data) {
					return false
				}
				for i, line := range strings.Split(string(data), "\n") {
					if re.MatchString(line) {
						if n == most {
							return true
						}
						if len(line) > maxGrepLine {
							cut := maxGrepLine
							for cut > 0 && !utf8.RuneStart(line[cut]) {
								cut-- // never through a character
							}
							line = line[:cut] + " [cut]"
						}
						fmt.Fprintf(&b, "%s:%d: %s\n", pl.show(name), i+1, line)
						n++
					}
				}
				return false
			}
			if fi, err := pl.fs.Stat(pl.name); err != nil {
				return "", err
			} else if !fi.IsDir() {
				search(pl.name, nil)
			} else if err := walk(ctx, pl, t.roots, true, search); err != nil {
				return "", err
			}
			if n == 0 {
				return "no matches\n", nil
			}
			if n == most {
				fmt.Fprintf(&b, "[the first %d matches; narrow the pattern or the path]\n", most)
			}
			return b.String(), nil
		},
	}
}
