// A net/http server on 127.0.0.1 for a load generator outside it (wrk, in
// bench/go-agent-http): answers "ok" to every request and has no timer of
// its own, so nothing in it is sub-millisecond. Prints its address on one
// line, then serves until killed.
// Usage: httpserve
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	err = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	}))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
