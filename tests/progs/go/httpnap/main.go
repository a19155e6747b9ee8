// A net/http server that a pod runs while something else happens to the node
// (tests/bats/cluster.bats restarts the agent under it), and the load it is
// given from outside the pod.
//
//	httpnap serve ADDR SLEEP   answers "ok" on ADDR; meanwhile a goroutine
//	                           sleeps SLEEP in a loop, and each second prints
//	                           "sleeps=N p50_late_us=L requests=R" (that
//	                           second's sleeps, their median lateness, the
//	                           requests answered so far)
//	httpnap load URL CLIENTS   GETs URL from CLIENTS clients, each a request
//	                           every 10 ms, until SIGINT or SIGTERM; then
//	                           prints "requests=N failed=F" and fails on any
//	                           failed request
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: httpnap serve ADDR SLEEP | httpnap load URL CLIENTS")
	os.Exit(2)
}

func main() {
	if len(os.Args) != 4 {
		usage()
	}
	switch os.Args[1] {
	case "serve":
		nap, err := time.ParseDuration(os.Args[3])
		if err != nil || nap <= 0 {
			usage()
		}
		serve(os.Args[2], nap)
	case "load":
		clients, err := strconv.Atoi(os.Args[3])
		if err != nil || clients <= 0 {
			usage()
		}
		load(os.Args[2], clients)
	default:
		usage()
	}
}

func serve(addr string, nap time.Duration) {
	var requests atomic.Int64
	go func() {
		var late []time.Duration
		next := time.Now().Add(time.Second)
		for {
			t := time.Now()
			time.Sleep(nap)
			now := time.Now()
			late = append(late, now.Sub(t)-nap)
			if now.After(next) {
				sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
				fmt.Printf("sleeps=%d p50_late_us=%d requests=%d\n", len(late),
					late[len(late)/2].Microseconds(), requests.Load())
				late, next = late[:0], now.Add(time.Second)
			}
		}
	}()
	err := http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		io.WriteString(w, "ok\n")
	}))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func load(url string, clients int) {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	var done atomic.Bool
	var requests, failed atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second}
			for !done.Load() {
				requests.Add(1)
				resp, err := client.Get(url)
				if err == nil {
					var body []byte
					body, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && string(body) != "ok\n" {
						err = fmt.Errorf("answered %q", body)
					}
				}
				if err != nil {
					if failed.Add(1) <= 5 {
						fmt.Fprintln(os.Stderr, err)
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	<-stop
	done.Store(true)
	wg.Wait()
	fmt.Printf("requests=%d failed=%d\n", requests.Load(), failed.Load())
	if failed.Load() > 0 {
		os.Exit(1)
	}
}
