//go:build unix

package loadgen

import (
	"crypto/tls"
	"net"
	"syscall"
)

// closedByPeer reports whether the server has closed an idle connection (its FIN
// or a reset is waiting on the socket), without consuming anything: a recv that
// peeks and does not wait. A read through net.Conn cannot tell: with a deadline
// in the past it returns before asking the socket.
func closedByPeer(nc net.Conn) bool {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// n == 0 without an error is the end of the stream; EAGAIN means nothing
		// is waiting; bytes waiting are left to the response reader, as before.
		closed = n == 0 && rerr == nil || rerr != nil && rerr != syscall.EAGAIN && rerr != syscall.EWOULDBLOCK && rerr != syscall.EINTR
		return true
	})
	return closed || err != nil
}
