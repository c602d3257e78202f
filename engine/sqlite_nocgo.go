//go:build !cgo

package engine

// Without cgo the SQLite driver is a stub that fails every call: Open
// answers a *StoreError of kind NoSQLite (Unimplemented) before touching
// the file, instead of an Internal error at the first query.
const haveSQLite = false

func sqliteBusy(error) bool { return false }

func sqliteKind(error) StoreKind { return "" }
