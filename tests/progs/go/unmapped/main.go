// Unmaps the first page of its own executable's mapping (the ELF headers,
// which nothing of the runtime reads after the start), prints "unmapped",
// then waits for the end of its standard input and exits 0. A PIE built so
// has no mapping of its file's offset 0 left: what the agent places its
// load bias by is gone, for good (tests/bats/agent.bats).
// Usage: unmapped
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		fmt.Fprintln(os.Stderr, "unmapped:", err)
		os.Exit(1)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		fmt.Fprintln(os.Stderr, "unmapped:", err)
		os.Exit(1)
	}
	var start uint64
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		// start-end perms offset dev inode path
		w := strings.Fields(lines.Text())
		if len(w) == 6 && w[5] == exe && w[2] == "00000000" {
			start, _ = strconv.ParseUint(strings.SplitN(w[0], "-", 2)[0], 16, 64)
			break
		}
	}
	f.Close()
	if start == 0 {
		fmt.Fprintln(os.Stderr, "unmapped: no mapping of offset 0 of", exe)
		os.Exit(1)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_MUNMAP, uintptr(start), uintptr(os.Getpagesize()), 0); e != 0 {
		fmt.Fprintln(os.Stderr, "unmapped: munmap:", e)
		os.Exit(1)
	}
	fmt.Println("unmapped")
	io.Copy(io.Discard, os.Stdin)
}
