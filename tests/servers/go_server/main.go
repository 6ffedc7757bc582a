// A Go net/http server for the live request tests (tests/bpf/test_requests_go_cpp_bpf.cpp):
// built with CGO_ENABLED=0 it is static and makes its syscalls itself (no libc to probe), so
// request tracing serves it from the syscall tracepoints. GET /hello answers "hello"; GET
// /metrics one Prometheus sample; GET /spin?ms=N burns N ms of CPU time then answers "spun"; POST
// /v1/chat/completions streams OpenAI-compatible SSE chunks (tests/servers/README.md).
// Usage: go_server PORT READY_FILE
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// The calling thread's CPU time (getrusage RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func chunk(id, content string, finish interface{}) string {
	delta := map[string]string{}
	if content != "" {
		delta["content"] = content
	}
	b, _ := json.Marshal(map[string]interface{}{"id": id, "object": "chat.completion.chunk", "created": 0, "model": "stack-test",
		"choices": []interface{}{map[string]interface{}{"index": 0, "delta": delta, "finish_reason": finish}}})
	return "data: " + string(b) + "\n\n"
}

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
	mux.HandleFunc("/spin", func(w http.ResponseWriter, r *http.Request) {
		// CPU time of this thread (the goroutine locked to it), not wall time: preempted
		// meanwhile, it takes longer, as real work would.
		ms, _ := strconv.ParseFloat(r.URL.Query().Get("ms"), 64)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		until := threadCPU() + time.Duration(ms*float64(time.Millisecond))
		for threadCPU() < until {
		}
		fmt.Fprint(w, "spun")
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		id := "chatcmpl-" + r.Header.Get("x-request-id")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		for _, word := range []string{"one", " two", " three", " four", " five"} {
			time.Sleep(5 * time.Millisecond)
			fmt.Fprint(w, chunk(id, word, nil))
			f.Flush()
		}
		fmt.Fprint(w, chunk(id, "", "stop"))
		fmt.Fprint(w, "data: [DONE]\n\n")
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
