// A ticker of a given period, for a given number of ticks: prints
// "ticks=N early=E" (a tick never comes before its period has passed since
// the start, counted from the first) and fails if any came early.
// Usage: ticker PERIOD COUNT
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: ticker PERIOD COUNT")
		os.Exit(2)
	}
	d, err := time.ParseDuration(os.Args[1])
	n, err2 := strconv.Atoi(os.Args[2])
	if err != nil || err2 != nil || d <= 0 {
		fmt.Fprintln(os.Stderr, "usage: ticker PERIOD COUNT")
		os.Exit(2)
	}
	t := time.NewTicker(d)
	start := time.Now()
	early := 0
	for i := 1; i <= n; i++ {
		<-t.C
		if time.Since(start) < time.Duration(i)*d {
			early++
		}
	}
	fmt.Printf("ticks=%d early=%d\n", n, early)
	if early > 0 {
		os.Exit(1)
	}
}
