package shown

import "testing"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain/path.go":         "plain/path.go",
		"tabs\tand\nlines stay": "tabs\tand\nlines stay",
		"caf\u00e9 \u2764":      "caf\u00e9 \u2764",
		"notes\u202egol.txt":    `notes\u202egol.txt`,
		"zero\u200bwidth":       `zero\u200bwidth`,
		"esc\x1b[2J":            `esc\x1b[2J`,
		"line\u2028sep":         `line\u2028sep`,
		"if \u3164 {":           `if \u3164 {`,
		"bad\xffbyte":           `bad\xffbyte`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
