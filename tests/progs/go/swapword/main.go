// A hostile Go program, for the agent's tests: it swaps the word the agent
// reads for its epoll fd (runtime.epfd) to another file it opens, while its
// runtime is blocked in one of its first 3 netpoll waits of under 1 ms (the
// first is the one at which the agent's kernel side asks for the program's
// waker, and the agent then reads the word), and puts it back 300 us before
// the wait's end, before the runtime reads it again. A reader that took the
// file at that word would get the other file (in the test, one on a FUSE file
// system whose FLUSH never answers). It sleeps as sleeps does, once a line
// comes on its input, and prints each sleep's lateness in nanoseconds; says
// "swapped N" on stderr (N waits swapped).
//
// The swap is made by a thread of C's, which the Go scheduler does not stop:
// no goroutine could run while the runtime's only poller is blocked. It swaps
// $SWAP_AFTER_NS ns (10000) after the runtime's poller began the wait: the
// kernel side reads the word too as the thread goes to sleep (it must still
// name the wait's fd then), and the agent's read comes tens or hundreds of
// microseconds later.
//
// Usage: swapword FILE DURATION COUNT. FILE is opened by the program itself,
// by a bare open(2): a shell's redirection would close a copy of it, and a
// close of a file on a file system whose FLUSH never answers waits for good.
// Built with cgo, not PIE: runtime.epfd's address is its symbol's.
package main

/*
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static int32_t *word;
static int64_t *lastpoll, *polluntil;
static int32_t other;
static int64_t after_ns = 10000;
static volatile int stop, flips;
static sem_t sleeping; // posted by the program before each sleep

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t); // the runtime's nanotime
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

#define LOAD(p) __atomic_load_n(p, __ATOMIC_SEQ_CST)

// Real-time where it may be had (root), at a priority above the program's
// own threads when the test runs it real-time too (chrt -f 1), and woken by
// the program before each of its sleeps: on a loaded machine a late wake-up
// past the wait's end would leave the swapped word to the runtime, which
// dies on it.
static void *swapper(void *arg)
{
	(void)arg;
	struct sched_param rt = { .sched_priority = 2 };
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt);
	while (sem_wait(&sleeping) == 0 && !stop && flips < 3) {
		// The runtime empties lastpoll just before its poller reads
		// the word and blocks until pollUntil (at most 1 ms: the
		// agent's kernel side asks for a waker at such a wait); soon
		// after it has read the word and blocks, and reads it again only
		// once the wait ends. A wait that ends 900 us or more from then
		// is swapped until 300 us before its end: even a waker the agent
		// made from the word read right before ends it after the word is
		// back.
		int64_t t0 = now_ns(), left;
		while (LOAD(lastpoll) != 0 && now_ns() - t0 < 2000000)
			;
		int32_t epfd = LOAD(word);
		t0 = now_ns();
		left = LOAD(polluntil) - t0;
		if (epfd < 0 || LOAD(lastpoll) != 0 || left < 900000 || left > 1000000)
			continue;
		while (now_ns() - t0 < after_ns)
			;
		if (LOAD(lastpoll) != 0)
			continue;
		__atomic_store_n(word, other, __ATOMIC_SEQ_CST);
		struct timespec hold = { 0, left - 300000 };
		nanosleep(&hold, NULL);
		__atomic_store_n(word, epfd, __ATOMIC_SEQ_CST);
		flips++;
	}
	return NULL;
}

static int start_swapper(uintptr_t at, uintptr_t lp, uintptr_t pu, int fd)
{
	pthread_t t;
	word = (int32_t *)at;
	lastpoll = (int64_t *)lp;
	polluntil = (int64_t *)pu;
	other = fd;
	sem_init(&sleeping, 0, 0);
	if (getenv("SWAP_AFTER_NS"))
		after_ns = atoll(getenv("SWAP_AFTER_NS"));
	return pthread_create(&t, NULL, swapper, NULL);
}

static void before_sleep(void) { sem_post(&sleeping); }
static int swapped(void) { stop = 1; sem_post(&sleeping); return flips; }
*/
import "C"

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
	"time"

	"epollfix.test/progs/args"
)

const usage = "swapword FILE DURATION COUNT"

func main() {
	// No collection: its workers would make waits the agent is asked at
	// before the swaps begin.
	debug.SetGCPercent(-1)
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage:", usage)
		os.Exit(2)
	}
	fd, err := syscall.Open(os.Args[1], syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		die(err)
	}
	os.Args = append(os.Args[:1], os.Args[2:]...)
	d, n := args.Duration(usage, true)
	at, lastpoll, pollUntil := addresses()
	if C.start_swapper(C.uintptr_t(at), C.uintptr_t(lastpoll), C.uintptr_t(pollUntil), C.int(fd)) != 0 {
		fmt.Fprintln(os.Stderr, "swapword: no thread")
		os.Exit(2)
	}
	// Its first waits are the swapped ones: it waits for a line on its
	// input (read by a bare read(2), which no netpoll wait goes with: the
	// agent attaches it meanwhile).
	var b [1]byte
	syscall.Read(0, b[:])
	late := make([]time.Duration, n)
	for i := range late {
		C.before_sleep()
		t := time.Now()
		time.Sleep(d)
		late[i] = time.Since(t) - d
	}
	fmt.Fprintln(os.Stderr, "swapped", C.swapped())
	for _, l := range late {
		fmt.Println(int64(l))
	}
}

// addresses: runtime.epfd's, sched.lastpoll's
// and pollUntil's, from this executable's symbol table and its DWARF (the
// fields' offsets in runtime.schedt).
func addresses() (epfd, lastpoll, pollUntil uintptr) {
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		die(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		die(err)
	}
	var sched uintptr
	for _, s := range syms {
		switch s.Name {
		case "runtime.epfd":
			epfd = uintptr(s.Value)
		case "runtime.sched":
			sched = uintptr(s.Value)
		}
	}
	d, err := f.DWARF()
	if err != nil {
		die(err)
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagStructType || e.Val(dwarf.AttrName) != "runtime.schedt" {
			continue
		}
		for {
			m, err := r.Next()
			if err != nil || m == nil || m.Tag == 0 {
				break
			}
			if m.Tag != dwarf.TagMember {
				continue
			}
			off, _ := m.Val(dwarf.AttrDataMemberLoc).(int64)
			switch m.Val(dwarf.AttrName) {
			case "lastpoll":
				lastpoll = sched + uintptr(off)
			case "pollUntil":
				pollUntil = sched + uintptr(off)
			}
		}
		break
	}
	if epfd == 0 || sched == 0 || lastpoll == 0 || pollUntil == 0 {
		die(fmt.Errorf("no runtime.epfd, runtime.sched, schedt.lastpoll or schedt.pollUntil"))
	}
	return epfd, lastpoll, pollUntil
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "swapword:", err)
	os.Exit(2)
}
