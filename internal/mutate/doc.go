// Command mutate measures how many deliberately planted bugs grove's tests
// catch. It reads a list of mutants — single-line bugs a backend author
// could plausibly write — plants each one alone in a copy of the module,
// runs the tests that judge it, and reports which mutants the tests killed
// and which survived:
//
//	go run ./internal/mutate                  # every mutant, against HEAD
//	go run ./internal/mutate -only mem-log    # mutants whose id or file contains "mem-log"
//	go run ./internal/mutate -list            # list the mutants and check they apply
//
// It adds no dependency to the module and is never run by go test ./...:
// it is a main package with no tests.
//
// # The copy
//
// The module at revision -rev (default HEAD) is written with git archive
// into one temporary directory, reused for every mutant: the mutated file
// is restored before the next one is planted. Uncommitted changes in the
// working tree are not measured; mutants.txt itself is read from the
// working tree. Before any mutant, each test command that will judge one
// is run once on the unmutated copy: a suite that fails without a bug
// would kill every mutant, so the run stops there. Test commands run one
// at a time.
//
// # The mutants file
//
// internal/mutate/mutants.txt holds one entry per mutant: a block of
// "key: value" lines, blocks separated by blank lines, "#" starting a
// comment line. The value is everything after "key: ", verbatim.
//
//	id:   mem-log-limit-off-by-one
//	file: memorybackend/head.go
//	find: hashes = hashes[:opts.Limit]
//	repl: hashes = hashes[:opts.Limit-1]
//	desc: Log returns one checkpoint fewer than the limit asks for
//	test: go test ./memorybackend -count=1    (optional)
//
// find must occur exactly once in the file, and find and repl are each one
// line: every mutant changes a single line. A mutant that does not apply
// (the fragment is missing or ambiguous) stops the run before any test,
// with a non-zero exit, naming it.
//
// The test command defaults by the mutated file's package:
//
//	gitbackend/...                 go test ./gitbackend -run 'Conformance' -count=1
//	memorybackend/..., workspace/...  go test ./memorybackend ./workspace -count=1
//
// A mutant of any other file must name its command. Commands are split
// into words as a shell would (single and double quotes group; no
// expansion) and must start with "go test".
//
// # Results
//
// A mutant is killed when its test command fails: by a failing test, by a
// panic, by exceeding -timeout (the command's process group is killed), or
// because the mutated code does not compile. Compile failures are counted
// apart: a mutant that does not compile tests the compiler, not the suite,
// and the list should not hold any. A mutant survives when every test
// passes with the bug planted. The run prints a Markdown table — the
// mutant, where it is, the verdict, the first failing test that killed it,
// its time — then the kill ratio and the survivors, and exits 0; with -min
// it exits 1 when the kill ratio is below that percentage.
//
// internal/mutate/RESULTS.md keeps the table of a full run, with the
// commit, the machine, the wall time, and for each survivor the clause it
// breaks and the case that would kill it.
package main
