//go:build cgo

package engine

import (
	"errors"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// haveSQLite reports whether this binary can open SQLite databases: the
// driver is cgo, so only a cgo build can.
const haveSQLite = true

// sqliteBusy reports whether err is SQLite's lock held past the busy
// timeout.
func sqliteBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// sqliteKind classifies an error SQLite returned: StoreCorrupt for
// malformed pages, NotADatabase for a file SQLite does not recognise, ""
// for anything else.
func sqliteKind(err error) StoreKind {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrCorrupt:
			return StoreCorrupt
		case sqlite3.ErrNotADB:
			return NotADatabase
		case sqlite3.ErrCantOpen, sqlite3.ErrReadonly, sqlite3.ErrPerm:
			return StoreInaccessible
		}
	}
	return ""
}
