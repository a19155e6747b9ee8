// A net/http server on 127.0.0.1 under a bounded load from its own clients,
// with an optional goroutine sleeping a sub-ms time in a loop meanwhile.
// Prints "requests=N failed=F sleeps=S early=E rps=R max_us=M" (M: the
// longest sleep, in us) and fails on any failed request or early sleep.
// Usage: httpload REQUESTS CLIENTS [SLEEP]
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: httpload REQUESTS CLIENTS [SLEEP]")
		os.Exit(2)
	}
	total, _ := strconv.Atoi(os.Args[1])
	clients, _ := strconv.Atoi(os.Args[2])
	var nap time.Duration
	if len(os.Args) > 3 {
		nap, _ = time.ParseDuration(os.Args[3])
	}
	if total <= 0 || clients <= 0 {
		fmt.Fprintln(os.Stderr, "usage: httpload REQUESTS CLIENTS [SLEEP]")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	}))
	url := "http://" + ln.Addr().String() + "/"

	var done atomic.Bool
	var sleeps, early int64
	var longest time.Duration
	var napper sync.WaitGroup
	if nap > 0 {
		napper.Add(1)
		go func() {
			defer napper.Done()
			for !done.Load() {
				t := time.Now()
				time.Sleep(nap)
				took := time.Since(t)
				if took < nap {
					early++
				}
				if took > longest {
					longest = took
				}
				sleeps++
			}
		}()
	}
	var next, failed int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second}
			for atomic.AddInt64(&next, 1) <= int64(total) {
				resp, err := client.Get(url)
				if err != nil {
					atomic.AddInt64(&failed, 1)
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(body) != "ok\n" {
					atomic.AddInt64(&failed, 1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	done.Store(true)
	napper.Wait()
	fmt.Printf("requests=%d failed=%d sleeps=%d early=%d rps=%.0f max_us=%d\n", total, failed, sleeps,
		early, float64(total)/elapsed.Seconds(), longest.Microseconds())
	if failed > 0 || early > 0 {
		os.Exit(1)
	}
}
