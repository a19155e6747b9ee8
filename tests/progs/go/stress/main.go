// Everything at once that a supervisor of the Go runtime's waits could get
// wrong: random sub-ms and ms sleepers, a loopback ping-pong, a storm of
// signals, a Go child started with os/exec, and at the end a re-exec of the
// program in place (syscall.Exec: same pid, a new runtime and epoll fd).
// Prints one line of counts; fails on an early sleep, a lost or wrong echo,
// a lost signal or a wrong exit code.
// Usage: stress [SECONDS]   (stress child | stress again: its own parts)
//        stress run COMMAND [ARGS...]: runs the command, exits with its code
//        stress exec PROGRAM [ARGS...]: sleeps 20 x 100us, then execs PROGRAM in place
package main

import (
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// sleepers runs n goroutines sleeping random times (10us..2ms) until stop:
// the number of sleeps, and of those that came back early.
func sleepers(n int, stop *atomic.Bool) (int64, int64) {
	var total, early int64
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			for !stop.Load() {
				d := time.Duration(10000 + r.Int63n(1990000))
				t := time.Now()
				time.Sleep(d)
				if time.Since(t) < d {
					atomic.AddInt64(&early, 1)
				}
				atomic.AddInt64(&total, 1)
			}
		}(int64(i))
	}
	wg.Wait()
	return total, early
}

// pingpong sends rounds one-byte messages over loopback TCP and checks each
// echo: the rounds that came back right.
func pingpong(rounds int) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return -1
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 1)
		for {
			if _, err := c.Read(b); err != nil {
				return
			}
			b[0]++
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return -1
	}
	defer c.Close()
	ok := 0
	b := make([]byte, 1)
	for i := 0; i < rounds; i++ {
		b[0] = byte(i)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(b); err != nil {
			break
		}
		if _, err := c.Read(b); err != nil {
			break
		}
		if b[0] == byte(i+1) {
			ok++
		}
	}
	return ok
}

// signals sends n SIGUSR1 to the process, one at a time, each after the last
// was received: the number received.
func signals(n int) int {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	defer signal.Stop(ch)
	got := 0
	for i := 0; i < n; i++ {
		syscall.Kill(os.Getpid(), syscall.SIGUSR1)
		select {
		case <-ch:
			got++
		case <-time.After(5 * time.Second):
			return got
		}
	}
	return got
}

func part(seconds float64) (sleeps, early int64) {
	var stop atomic.Bool
	go func() {
		time.Sleep(time.Duration(seconds * float64(time.Second)))
		stop.Store(true)
	}()
	return sleepers(8, &stop)
}

func main() {
	// The netpoller first, before any other fd: its epoll fd then takes the
	// same number in every image, and the re-exec's new instance reuses the
	// old one's number (the supervisor must tell them apart by kcmp).
	time.Sleep(time.Microsecond)
	if len(os.Args) > 2 && os.Args[1] == "run" {
		c := exec.Command(os.Args[2], os.Args[3:]...)
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		err := c.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		} else if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(127)
		}
		return
	}
	if len(os.Args) > 2 && os.Args[1] == "exec" {
		// Sub-ms sleeps first, so a supervisor has read this image, then
		// another program in place: the same pid, another image.
		for i := 0; i < 20; i++ {
			time.Sleep(100 * time.Microsecond)
		}
		syscall.Exec(os.Args[2], os.Args[2:], os.Environ())
		fmt.Fprintln(os.Stderr, "exec failed")
		os.Exit(127)
	}
	if len(os.Args) > 1 && os.Args[1] == "child" {
		s, e := part(0.3)
		fmt.Fprintf(os.Stderr, "child: sleeps=%d early=%d\n", s, e)
		if e > 0 {
			os.Exit(1)
		}
		os.Exit(7)
	}
	if len(os.Args) > 1 && os.Args[1] == "again" {
		s, e := part(0.5)
		fmt.Printf("again: sleeps=%d early=%d\n", s, e)
		if e > 0 {
			os.Exit(1)
		}
		return
	}
	seconds := 2.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = v
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var sleeps, early int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		sleeps, early = sleepers(16, &stop)
	}()
	pongs, sigs := 0, 0
	wg.Add(2)
	go func() { defer wg.Done(); pongs = pingpong(3000) }()
	go func() { defer wg.Done(); sigs = signals(500) }()
	child := exec.Command(os.Args[0], "child")
	child.Stderr = os.Stderr
	err := child.Run()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err == nil {
		code = 0
	}
	time.Sleep(time.Duration(seconds * float64(time.Second)))
	stop.Store(true)
	wg.Wait()
	fmt.Printf("sleeps=%d early=%d pongs=%d/3000 signals=%d/500 child=%d\n", sleeps, early, pongs,
		sigs, code)
	if early > 0 || pongs != 3000 || sigs != 500 || code != 7 {
		os.Exit(1)
	}
	// In place: the same pid runs a new runtime, with a new epoll instance.
	exe, _ := os.Executable()
	syscall.Exec(exe, []string{os.Args[0], "again"}, os.Environ())
	fmt.Println("exec failed")
	os.Exit(1)
}
