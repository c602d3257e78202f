// Package shown makes text an agent wrote (a path, a message, a line of a
// file) safe to show to a person: every character that would not show as
// itself is written as an escape, so a bidirectional override cannot make
// a name read backwards and a terminal or a page shows what is there.
package shown

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r would not show as itself: a control character,
// a format character (the bidirectional overrides that make a name read
// backwards, zero-width ones), a line or paragraph separator, or another
// character Unicode says to draw as nothing (the Hangul fillers an
// "invisible" identifier is made of).
func Hidden(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Other_Default_Ignorable_Code_Point)
}

// Printable is s with every hidden character but newline and tab written
// as a Go escape (\u202e, \x1b), and every byte that is not UTF-8 as \xNN.
func Printable(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return Hidden(r) && r != '\n' && r != '\t' }) < 0 {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "\\x%02x", s[0])
		case Hidden(r) && r != '\n' && r != '\t':
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}
