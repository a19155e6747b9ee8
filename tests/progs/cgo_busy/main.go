// A Go program whose C code (cgo) spins on epoll_wait(..., 0): the shape of a
// C library's busy poller inside a Go service. The Go runtime's own netpoller
// makes raw system calls libepollfix cannot see; the C code's calls go through
// libc, where --clamp reaches them.
//
//	ef-cgo-busy SECONDS
//
// Prints "cpu_pct=.. cpu_permille=.. polls=..": the process's user+system time
// over wall time.
package main

/*
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static long spin(double seconds)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev;
	long polls = 0;
	double end = now() + seconds;
	while (now() < end) {
		epoll_wait(ep, &ev, 1, 0);
		polls++;
	}
	close(ep);
	return polls;
}
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	seconds, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "usage: ef-cgo-busy SECONDS")
		os.Exit(2)
	}
	start, c0 := time.Now(), cpu()
	polls := C.spin(C.double(seconds))
	wall, used := time.Since(start), cpu()-c0
	share := used.Seconds() / wall.Seconds()
	fmt.Printf("cpu_pct=%d cpu_permille=%d polls=%d\n", int(100*share), int(1000*share), polls)
}
