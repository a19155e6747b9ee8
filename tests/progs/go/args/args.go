// Package args reads the test programs' common arguments, "DURATION [COUNT]",
// and stops the program with its usage line (exit 2) on anything else.
package args

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Duration returns os.Args[1], a positive Go duration; with count set it
// also wants os.Args[2], a count of at least 0, and returns it.
func Duration(usage string, count bool) (time.Duration, int) {
	want := 2
	if count {
		want = 3
	}
	if len(os.Args) == want {
		d, err := time.ParseDuration(os.Args[1])
		n := 0
		if err == nil && count {
			n, err = strconv.Atoi(os.Args[2])
		}
		if err == nil && d > 0 && n >= 0 {
			return d, n
		}
	}
	fmt.Fprintln(os.Stderr, "usage:", usage)
	os.Exit(2)
	return 0, 0
}

// StartAfter waits the Go duration in $START_AFTER, if any, before the
// program's measured part: a benchmark's agent has attached it by then
// (bench/go-agent). Not set, it returns at once.
func StartAfter() {
	if d, err := time.ParseDuration(os.Getenv("START_AFTER")); err == nil && d > 0 {
		time.Sleep(d)
	}
}
