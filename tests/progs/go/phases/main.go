// Sleeps of a given length in rounds that its standard input asks for, so a
// test can change what runs beside it between rounds (attach, stop or kill
// an agent): each line "N" makes N sleeps, then prints
// "n=N min_us=.. max_us=.. short=K early=E sigurg=S" (the round's shortest
// and longest lateness; K: its sleeps that ended less than 900 us late, before
// the runtime's own 1 ms wait could; sleeps that came back early; SIGURGs
// seen so far by signal.Notify, which the runtime's preemption also delivers). Exits 0
// at the end of its input, 1 if any sleep came back early.
// Usage: phases DURATION
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"epollfix.test/progs/args"
)

func main() {
	d, _ := args.Duration("phases DURATION", false)
	urg := make(chan os.Signal, 1024)
	signal.Notify(urg, syscall.SIGURG)
	var seen int64
	go func() {
		for range urg {
			atomic.AddInt64(&seen, 1)
		}
	}()
	early := 0
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		n, err := strconv.Atoi(in.Text())
		if err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "phases: a round is a positive number of sleeps")
			os.Exit(2)
		}
		var min, max time.Duration = 1 << 62, 0
		short := 0
		for i := 0; i < n; i++ {
			t := time.Now()
			time.Sleep(d)
			l := time.Since(t) - d
			if l < 0 {
				early++
			}
			if l < 900*time.Microsecond {
				short++
			}
			if l < min {
				min = l
			}
			if l > max {
				max = l
			}
		}
		fmt.Printf("n=%d min_us=%d max_us=%d short=%d early=%d sigurg=%d\n", n, min.Microseconds(),
			max.Microseconds(), short, early, atomic.LoadInt64(&seen))
	}
	if early > 0 {
		os.Exit(1)
	}
}
