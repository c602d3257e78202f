package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// mutant is one planted bug: in file, the single occurrence of find is
// replaced by repl.
type mutant struct {
	id   string
	file string // slash path relative to the module root
	find string
	repl string
	desc string
	test string // the go test command that judges it ("" for the default)
	line int    // where the entry starts in the mutants file
}

// parseMutants reads the mutants file format described in the package
// documentation.
func parseMutants(r io.Reader, name string) ([]*mutant, error) {
	var out []*mutant
	var cur *mutant
	var errs []error
	finish := func() {
		if cur == nil {
			return
		}
		if err := cur.validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, cur.line, err))
		}
		out = append(out, cur)
		cur = nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case strings.TrimSpace(line) == "":
			finish()
			continue
		case strings.HasPrefix(line, "#"):
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			errs = append(errs, fmt.Errorf("%s:%d: want \"key: value\", got %q", name, n, line))
			continue
		}
		val = strings.TrimPrefix(val, " ")
		if cur == nil {
			cur = &mutant{line: n}
		}
		var field *string
		switch key {
		case "id":
			field = &cur.id
		case "file":
			field = &cur.file
		case "find":
			field = &cur.find
		case "repl":
			field = &cur.repl
		case "desc":
			field = &cur.desc
		case "test":
			field = &cur.test
		default:
			errs = append(errs, fmt.Errorf("%s:%d: unknown key %q", name, n, key))
			continue
		}
		if *field != "" {
			errs = append(errs, fmt.Errorf("%s:%d: %s given twice in one entry", name, n, key))
		}
		*field = val
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	finish()
	seen := map[string]int{}
	for _, m := range out {
		if prev, ok := seen[m.id]; ok && m.id != "" {
			errs = append(errs, fmt.Errorf("%s:%d: id %q already used at line %d", name, m.line, m.id, prev))
		}
		seen[m.id] = m.line
	}
	return out, errors.Join(errs...)
}

func (m *mutant) validate() error {
	switch {
	case m.id == "":
		return errors.New("entry has no id")
	case strings.ContainsAny(m.id, " \t|"):
		return fmt.Errorf("id %q holds a blank or a '|'", m.id)
	case m.file == "":
		return fmt.Errorf("%s: no file", m.id)
	case strings.TrimSpace(m.find) == "":
		return fmt.Errorf("%s: no find fragment", m.id)
	case m.find == m.repl:
		return fmt.Errorf("%s: repl equals find: nothing is mutated", m.id)
	case m.desc == "":
		return fmt.Errorf("%s: no desc", m.id)
	}
	if _, err := m.command(); err != nil {
		return fmt.Errorf("%s: %w", m.id, err)
	}
	return nil
}

// Default test commands, by the package of the mutated file.
const (
	gitCommand    = "go test ./gitbackend -run 'Conformance' -count=1"
	memoryCommand = "go test ./memorybackend ./workspace -count=1"
)

// commandLine returns the test command that judges m, as written.
func (m *mutant) commandLine() string {
	switch {
	case m.test != "":
		return m.test
	case strings.HasPrefix(m.file, "gitbackend/"):
		return gitCommand
	case strings.HasPrefix(m.file, "memorybackend/"), strings.HasPrefix(m.file, "workspace/"):
		return memoryCommand
	}
	return ""
}

// command returns the words of the test command that judges m.
func (m *mutant) command() ([]string, error) {
	line := m.commandLine()
	if line == "" {
		return nil, fmt.Errorf("no default test command for %s: name one in a test: line", m.file)
	}
	words, err := splitWords(line)
	if err != nil {
		return nil, err
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "test" {
		return nil, fmt.Errorf("test command %q does not start with \"go test\"", line)
	}
	return words, nil
}

// apply returns src with m planted, or an error when m's fragment does
// not occur exactly once. It also returns the line number it changed.
func (m *mutant) apply(src string) (string, int, error) {
	switch n := strings.Count(src, m.find); n {
	case 1:
	case 0:
		return "", 0, fmt.Errorf("%s: %s: the fragment %q does not occur", m.id, m.file, m.find)
	default:
		return "", 0, fmt.Errorf("%s: %s: the fragment %q occurs %d times, want once", m.id, m.file, m.find, n)
	}
	i := strings.Index(src, m.find)
	return src[:i] + m.repl + src[i+len(m.find):], 1 + strings.Count(src[:i], "\n"), nil
}

// splitWords splits a command line into words as a shell would, with
// single and double quotes grouping and a backslash escaping the next
// character outside single quotes; nothing is expanded.
func splitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			w.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\':
			escaped, inWord = true, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, fmt.Errorf("unterminated quote or escape in %q", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
