// The floor of figure 6 (docs/BENCHMARKS.md): the least a lock-holding sidecar can be, built from Go's standard library
// alone. It does what warden's hold mode is measured doing and nothing else: takes an exclusive flock(2) on
// <data root>/data/server.lock (retrying each second while another process holds it) and answers the kubelet's probes
// on the management port, started and live always, ready only while the lock is held. No reaper, no API, no metrics:
// what warden costs beyond this is what its features cost.
package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
)

// The open file that holds the flock: kept referenced, since an unreachable *os.File is closed by its finalizer.
var lock *os.File

func main() {
	root := os.Getenv("WARDEN_DATA_ROOT")
	if root == "" {
		root = "/var/lib/lilbee"
	}
	path := filepath.Join(root, "data", "server.lock")
	var held atomic.Bool
	go func() {
		for !take(path) {
			time.Sleep(time.Second)
		}
		held.Store(true)
	}()
	up := func(w http.ResponseWriter, _ *http.Request) { answer(w, true) }
	http.HandleFunc("/q/health/started", up)
	http.HandleFunc("/q/health/live", up)
	http.HandleFunc("/q/health/ready", func(w http.ResponseWriter, _ *http.Request) { answer(w, held.Load()) })
	server := &http.Server{Addr: ":9096", ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 75 * time.Second}
	fmt.Fprintln(os.Stderr, server.ListenAndServe())
	os.Exit(1)
}

// take opens the lock file without following a link and takes the flock without waiting; true once it is held.
func take(path string) bool {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return false
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		f.Close()
		return false
	}
	lock = f
	return true
}

func answer(w http.ResponseWriter, up bool) {
	w.Header().Set("Content-Type", "application/json")
	if up {
		fmt.Fprint(w, `{"status":"UP"}`)
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprint(w, `{"status":"DOWN"}`)
}
