// Sleeps of a given length, N times; prints each sleep's lateness in
// nanoseconds (one per line) after all of them, and fails if any came back
// early. Usage: sleeps DURATION COUNT (START_AFTER: args.StartAfter).
package main

import (
	"fmt"
	"os"
	"time"

	"epollfix.test/progs/args"
)

func main() {
	d, n := args.Duration("sleeps DURATION COUNT", true)
	args.StartAfter()
	late := make([]time.Duration, n)
	early := 0
	for i := range late {
		t := time.Now()
		time.Sleep(d)
		late[i] = time.Since(t) - d
		if late[i] < 0 {
			early++
		}
	}
	for _, l := range late {
		fmt.Println(int64(l))
	}
	if early > 0 {
		fmt.Fprintf(os.Stderr, "sleeps: %d sleeps came back early\n", early)
		os.Exit(1)
	}
}
