package sandbox

import (
	"encoding/binary"
	"runtime"
)

// The kernel keyrings are not a namespace: a sandboxed command would
// inherit the caller's session keyring and read its keys (Kerberos
// caches, ecryptfs and cifs credentials, a tool's tokens). bubblewrap
// loads a seccomp filter (--seccomp) that refuses the keyring system
// calls (add_key, request_key, keyctl) with EPERM; every other call is
// allowed.

// keyCalls are the keyring system calls' numbers, per audit architecture
// of the kernel ABIs a program of this machine may use.
var keyCalls = map[string][]struct {
	arch uint32
	mask uint32    // cleared from the number first (x32's flag bit)
	nrs  [3]uint32 // add_key, request_key, keyctl
}{
	"amd64": {
		{arch: 0xC000003E, mask: 0x40000000, nrs: [3]uint32{248, 249, 250}}, // x86_64 (and x32)
		{arch: 0x40000003, nrs: [3]uint32{286, 287, 288}},                   // i386
	},
	"arm64": {
		{arch: 0xC00000B7, nrs: [3]uint32{217, 218, 219}}, // aarch64
		{arch: 0x40000028, nrs: [3]uint32{309, 310, 311}}, // arm
	},
}

// BPF opcodes and seccomp return values, as <linux/filter.h> and
// <linux/seccomp.h> define them.
const (
	bpfLdAbs   = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJeq     = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfAnd     = 0x54 // BPF_ALU | BPF_AND | BPF_K
	bpfRet     = 0x06 // BPF_RET | BPF_K
	retAllow   = 0x7fff0000
	retErrPerm = 0x00050000 | 1 // SECCOMP_RET_ERRNO | EPERM
)

type insn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

// seccompFilter is the filter for this machine's architecture, encoded as
// bubblewrap reads it (struct sock_filter, native byte order); nil where
// the keyring calls' numbers are not known here (no filter is loaded).
func seccompFilter() []byte {
	blocks, ok := keyCalls[runtime.GOARCH]
	if !ok {
		return nil
	}
	var prog []insn
	var denies []int // indexes of the jumps to the final deny
	for _, b := range blocks {
		body := []insn{{code: bpfLdAbs, k: 0}} // the call's number
		if b.mask != 0 {
			body = append(body, insn{code: bpfAnd, k: ^b.mask})
		}
		start := len(prog) + 2 + len(body) // where the number comparisons begin
		for i, nr := range b.nrs {
			body = append(body, insn{code: bpfJeq, k: nr})
			denies = append(denies, start+i)
		}
		body = append(body, insn{code: bpfRet, k: retAllow})
		prog = append(prog, insn{code: bpfLdAbs, k: 4}, insn{code: bpfJeq, k: b.arch, jf: uint8(len(body))})
		prog = append(prog, body...)
	}
	prog = append(prog, insn{code: bpfRet, k: retAllow})
	deny := len(prog)
	prog = append(prog, insn{code: bpfRet, k: retErrPerm})
	for _, i := range denies {
		prog[i].jt = uint8(deny - i - 1)
	}
	out := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		out = binary.NativeEndian.AppendUint16(out, in.code)
		out = append(out, in.jt, in.jf)
		out = binary.NativeEndian.AppendUint32(out, in.k)
	}
	return out
}
