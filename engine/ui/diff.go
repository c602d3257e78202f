package ui

import (
	"strconv"
	"strings"
)

// maxDiffLines bounds the lines of one diff the page renders; the rest is
// in the patch download.
const maxDiffLines = 5000

// fileDiff is one file of a unified patch, ready to render.
type fileDiff struct {
	Path    string // the path after the change (before it, for a deletion)
	Old     string // the path before, when the file was renamed
	Binary  bool
	Cut     bool // lines of it are not rendered (maxDiffLines)
	Added   int
	Deleted int
	Hunks   []hunk
}

// hunk is one "@@" section of a file's diff.
type hunk struct {
	Header string
	Lines  []diffLine // inline: in patch order
	Rows   []diffRow  // side by side: deletions paired with additions
}

// diffLine is one line of a hunk. Kind is "ctx", "add", "del" or "note"
// (git's "\ No newline at end of file").
type diffLine struct {
	Kind     string
	Old, New int // line numbers, 0 where the line has none
	Text     string
}

// diffRow is one row of the side-by-side view.
type diffRow struct {
	Left, Right diffLine // a zero side (Kind "") is empty
}

// parsePatch reads a unified patch as git diff prints it. It renders at
// most maxDiffLines lines in all and reports whether it cut any.
func parsePatch(patch string) (files []fileDiff, truncated bool) {
	budget := maxDiffLines
	var f *fileDiff
	var h *hunk
	oldN, newN := 0, 0
	// Line by line, in place: a patch of a huge file costs no copy of it.
	for rest := patch; rest != ""; {
		var l string
		l, rest, _ = strings.Cut(rest, "\n")
		switch {
		case strings.HasPrefix(l, "diff --git "):
			files = append(files, fileDiff{})
			f, h = &files[len(files)-1], nil
			f.Path = gitHeaderPath(l[len("diff --git "):])
		case f == nil:
			// text before the first file: none in git's output
		case h == nil && strings.HasPrefix(l, "rename from "):
			f.Old = unquote(l[len("rename from "):])
		case h == nil && strings.HasPrefix(l, "rename to "):
			f.Path = unquote(l[len("rename to "):])
		case h == nil && strings.HasPrefix(l, "+++ "):
			// git ends a name that has a space with a tab here
			name := strings.TrimSuffix(l[4:], "\t")
			if p := strings.TrimPrefix(unquote(name), "b/"); p != "/dev/null" && p != name {
				f.Path = p
			}
		case h == nil && strings.HasPrefix(l, "--- "):
		case h == nil && strings.HasPrefix(l, "Binary files "):
			f.Binary = true
		case strings.HasPrefix(l, "@@ "):
			f.Hunks = append(f.Hunks, hunk{Header: l})
			h = &f.Hunks[len(f.Hunks)-1]
			oldN, newN = hunkStart(l)
		case h == nil:
			// mode, index and similarity lines
		default:
			kind, text := "", ""
			if l != "" {
				text = l[1:]
			}
			var dl diffLine
			switch {
			case l == "" || l[0] == ' ':
				kind = "ctx"
				dl = diffLine{Kind: kind, Old: oldN, New: newN, Text: text}
				oldN++
				newN++
			case l[0] == '-':
				f.Deleted++
				dl = diffLine{Kind: "del", Old: oldN, Text: text}
				oldN++
			case l[0] == '+':
				f.Added++
				dl = diffLine{Kind: "add", New: newN, Text: text}
				newN++
			default:
				dl = diffLine{Kind: "note", Text: strings.TrimPrefix(l, "\\ ")}
			}
			if budget <= 0 {
				truncated, f.Cut = true, true
				continue
			}
			budget--
			h.Lines = append(h.Lines, dl)
		}
	}
	for i := range files {
		for j := range files[i].Hunks {
			files[i].Hunks[j].Rows = sideBySide(files[i].Hunks[j].Lines)
		}
	}
	return files, truncated
}

// sideBySide pairs each run of deletions with the run of additions after
// it, row by row; context lines show on both sides.
func sideBySide(lines []diffLine) []diffRow {
	var rows []diffRow
	for i := 0; i < len(lines); {
		switch lines[i].Kind {
		case "del", "add":
			j := i
			for j < len(lines) && lines[j].Kind == "del" {
				j++
			}
			k := j
			for k < len(lines) && lines[k].Kind == "add" {
				k++
			}
			dels, adds := lines[i:j], lines[j:k]
			for n := 0; n < max(len(dels), len(adds)); n++ {
				var r diffRow
				if n < len(dels) {
					r.Left = dels[n]
				}
				if n < len(adds) {
					r.Right = adds[n]
				}
				rows = append(rows, r)
			}
			i = k
		default:
			rows = append(rows, diffRow{Left: lines[i], Right: lines[i]})
			i++
		}
	}
	return rows
}

// hunkStart reads the first old and new line numbers of "@@ -a,b +c,d @@".
func hunkStart(header string) (old, new int) {
	fields := strings.Fields(header)
	if len(fields) < 3 {
		return 0, 0
	}
	num := func(s string) int {
		s, _, _ = strings.Cut(s[1:], ",")
		n, _ := strconv.Atoi(s)
		return n
	}
	return num(fields[1]), num(fields[2])
}

// gitHeaderPath is the new path of a "diff --git a/X b/Y" header, which
// the "+++" and "rename to" lines correct when they follow. An unquoted
// header with spaces in its paths is split in the middle, where a/X and
// b/Y have the same length.
func gitHeaderPath(s string) string {
	if strings.HasPrefix(s, `"`) || strings.HasSuffix(s, `"`) {
		if i := strings.LastIndex(s, ` "b/`); i >= 0 {
			return strings.TrimPrefix(unquote(s[i+1:]), "b/")
		}
		if i := strings.LastIndex(s, " b/"); i >= 0 {
			return s[i+3:]
		}
		return s
	}
	if n := len(s); n%2 == 1 && strings.HasPrefix(s[n/2+1:], "b/") {
		return s[n/2+3:]
	}
	if i := strings.LastIndex(s, " b/"); i >= 0 {
		return s[i+3:]
	}
	return s
}

// unquote reads a path git quoted with C escapes ("a\tb", "\303\251");
// any other string is returned as it is.
func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}
