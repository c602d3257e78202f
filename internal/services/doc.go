// Package services gives each head what the services an agent starts in
// it need beside the other heads': a block of ports of its own on the
// host (Registry), names of its own (Slug), the variables that carry
// them and the project's templates over them (Env), and the processes
// started in it, found and stopped with it (List, Stop).
//
// Blocks are recorded in one file per host and user, under a lock, so
// that no two live heads of any repository overlap; a block is handed
// out only when each of its ports can be bound at that moment. A head's
// first choice is derived from its ID, so that the same head gets the
// same block again wherever it is free — after a resume, a repair, a
// relocation to another host.
//
// A process belongs to a head when its environment says so: grove gives
// GROVE_HEAD_ID to every command it runs on a head's content, and every
// process those start inherits it, a setsid or a double fork included.
// One that clears its environment, or was started by hand, is found by
// its working directory (List's all) and is stopped only on request.
package services
