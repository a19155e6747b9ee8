// A ticker of a given period, for a given number of ticks: prints
// "ticks=N early=E nvcsw=V cpu_us=C" (a tick never comes before its period
// has passed since the start; V and C: the process's voluntary context
// switches and CPU time, from getrusage) and fails if any came early.
// Usage: ticker PERIOD COUNT (START_AFTER: args.StartAfter)
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"epollfix.test/progs/args"
)

func main() {
	d, n := args.Duration("ticker PERIOD COUNT", true)
	args.StartAfter()
	// The clock first: the ticker's deadlines count from its creation, after.
	start := time.Now()
	t := time.NewTicker(d)
	early := 0
	for i := 1; i <= n; i++ {
		<-t.C
		if time.Since(start) < time.Duration(i)*d {
			early++
		}
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := (ru.Utime.Sec+ru.Stime.Sec)*1000000 + int64(ru.Utime.Usec+ru.Stime.Usec)
	fmt.Printf("ticks=%d early=%d nvcsw=%d cpu_us=%d\n", n, early, ru.Nvcsw, cpu)
	if early > 0 {
		os.Exit(1)
	}
}
