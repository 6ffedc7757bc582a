// A Go net/http server for the live request tests (tests/bpf/test_requests_stacks_bpf.cpp):
// built with CGO_ENABLED=0 it is static and makes its syscalls itself (no libc to probe), so
// request tracing serves it from the syscall tracepoints. GET /hello answers "hello"; GET
// /metrics one Prometheus sample. Usage: go_server PORT READY_FILE
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go_server PORT READY_FILE")
		os.Exit(2)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "hello")
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "demo_requests_total 1\n")
	})
	l, err := net.Listen("tcp", "127.0.0.1:"+os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[2], []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = http.Serve(l, mux)
}
