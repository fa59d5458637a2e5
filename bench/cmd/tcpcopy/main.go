// Command tcpcopy is the bench's floor for a proxy written in Go: it
// forwards bytes between each consumer's connection and a connection of its
// own to the producer, two goroutines a connection, and looks at nothing
// (no HTTP, no events). Its reads and writes are raw system calls inside
// the connections' RawConn calls, as agui-relay's are (Go's ordinary
// syscall entry wakes the runtime's monitor thread on an idle process:
// bench/README "What limits each figure"); the waiting is Go's poller. What
// it costs per event, paced, is what the Go runtime's scheduler and poller
// cost a proxy that does nothing else.
package main

import (
	"flag"
	"log"
	"net"
	"net/url"
	"syscall"
	"unsafe"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8083", "address to serve on")
	upstream := flag.String("upstream", "http://127.0.0.1:8082", "producer base URL (its host and port)")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil || u.Host == "" {
		log.Fatalf("upstream %q: %v", *upstream, err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go serve(c.(*net.TCPConn), u.Host)
	}
}

// serve forwards c to a new connection to the producer and back until
// either side ends.
func serve(c *net.TCPConn, upstream string) {
	defer c.Close()
	p, err := net.Dial("tcp", upstream)
	if err != nil {
		log.Print(err)
		return
	}
	defer p.Close()
	done := make(chan struct{})
	go func() {
		forward(c, p.(*net.TCPConn))
		close(done)
	}()
	forward(p.(*net.TCPConn), c)
	<-done // the producer's answer, to its end
}

// forward copies src to dst until src ends or either fails, then tells
// dst's peer nothing more comes.
func forward(dst, src *net.TCPConn) {
	defer dst.CloseWrite() //nolint:errcheck // the peer may be gone
	rsrc, err1 := src.SyscallConn()
	rdst, err2 := dst.SyscallConn()
	if err1 != nil || err2 != nil {
		return
	}
	buf := make([]byte, 32<<10)
	for {
		var n int
		var rerr error
		err := rsrc.Read(func(fd uintptr) bool {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			if e == syscall.EAGAIN {
				return false
			}
			n, rerr = int(r), errnoErr(e)
			return true
		})
		if err != nil || rerr != nil || n <= 0 {
			return
		}
		for off := 0; off < n; {
			var werr error
			err := rdst.Write(func(fd uintptr) bool {
				w, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&buf[off])), uintptr(n-off))
				if e == syscall.EAGAIN {
					return false
				}
				if werr = errnoErr(e); werr == nil {
					off += int(w)
				}
				return true
			})
			if err != nil || werr != nil {
				return
			}
		}
	}
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}
