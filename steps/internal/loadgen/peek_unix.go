//go:build unix

package loadgen

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
	"time"
)

// closedByPeer reports whether an idle connection can no longer carry a request:
// the server has closed it (its FIN or a reset is waiting on the socket) or has
// sent bytes nobody asked for (a "408 Request Timeout" before closing), which the
// next request's reader would take for its response. Nothing a live connection
// holds is consumed. A read through net.Conn cannot tell: with a deadline in the
// past it returns before asking the socket, so the socket is peeked.
func closedByPeer(nc net.Conn) bool {
	tc, isTLS := nc.(*tls.Conn)
	raw := nc
	if isTLS {
		raw = tc.NetConn()
	}
	waiting, closed := peekSocket(raw)
	switch {
	case closed:
		return true
	case !waiting:
		return false
	case !isTLS:
		return true
	}
	// Over TLS, bytes waiting may be a session ticket (TLS 1.3 sends them after
	// the handshake), which crypto/tls consumes as it reads, or the server's
	// close_notify, which ends the stream. A read through TLS that may wait a
	// millisecond tells them apart; a timeout leaves the connection usable.
	tc.SetReadDeadline(time.Now().Add(time.Millisecond))
	var b [1]byte
	n, err := tc.Read(b[:])
	tc.SetReadDeadline(time.Time{})
	var ne net.Error
	return n > 0 || !(errors.As(err, &ne) && ne.Timeout())
}

// peekSocket looks at what waits on a socket without consuming it or waiting: Go's
// sockets do not block, so a recv that finds nothing returns EAGAIN.
func peekSocket(nc net.Conn) (waiting, closed bool) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false, false
	}
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		switch {
		case n > 0:
			waiting = true
		case rerr == nil:
			closed = true // the end of the stream
		case rerr != syscall.EAGAIN && rerr != syscall.EWOULDBLOCK && rerr != syscall.EINTR:
			closed = true // reset, or any other error: no request can go through
		}
		return true
	})
	return waiting, closed || err != nil
}
