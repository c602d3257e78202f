package services

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

// Head is what a head's variables are made from.
type Head struct {
	Name, Slug string
	Ports      Block
}

// Vars are a head's variables: GROVE_PORT (its first port), GROVE_PORTS
// (first-last), GROVE_HEAD_SLUG and COMPOSE_PROJECT_NAME (its slug), then
// each of templates (a name and its value's template) rendered for it.
func Vars(h Head, templates map[string]string) ([]string, error) {
	out := []string{
		"GROVE_PORT=" + strconv.Itoa(h.Ports.First),
		"GROVE_PORTS=" + h.Ports.String(),
		"GROVE_HEAD_SLUG=" + h.Slug,
		"COMPOSE_PROJECT_NAME=" + h.Slug,
	}
	for _, name := range slices.Sorted(keys(templates)) {
		v, err := render(templates[name], h)
		if err != nil {
			return nil, fmt.Errorf("[env] %s: %w", name, err)
		}
		out = append(out, name+"="+v)
	}
	return out, nil
}

func keys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// varName is what a template may be called: no GROVE_ or GIT_ variable
// (grove's own, and git's, which would steer it).
var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckTemplates checks templates as Vars will render them, for a head
// of a block of size ports: a bad name, a template that does not parse
// or names a port the block lacks is an error naming it.
func CheckTemplates(templates map[string]string, size int) error {
	for _, name := range slices.Sorted(keys(templates)) {
		if !varName.MatchString(name) || strings.HasPrefix(name, "GROVE_") || strings.HasPrefix(name, "GIT_") {
			return fmt.Errorf("[env] %q: a variable's name is letters, digits and _, and not GROVE_ or GIT_", name)
		}
		if _, err := render(templates[name], Head{Name: "h", Slug: "s", Ports: Block{First: PortBase, Size: size}}); err != nil {
			return fmt.Errorf("[env] %s: %w", name, err)
		}
	}
	return nil
}

// render expands {{port N}}, {{slug}} and {{head}} in text.
func render(text string, h Head) (string, error) {
	t, err := template.New("env").Option("missingkey=error").Funcs(template.FuncMap{
		"port": h.Ports.Port,
		"slug": func() string { return h.Slug },
		"head": func() string { return h.Name },
	}).Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, nil); err != nil {
		return "", err
	}
	return b.String(), nil
}
