package main

import (
	"fmt"
	"net"
	"os"
	"sync/atomic"
)

// Ports for simulators that tests start and restart. They come from below the
// kernel's ephemeral range (32768 and up on Linux): a port handed out by
// Listen(":0") is an ephemeral one, and while a simulator restarts on it, any of
// the load generator's outgoing connections may take it as its local port. Each
// test process walks its own stride so parallel packages rarely meet, and each
// port is checked free before it is handed out.
const (
	testPortLow  = 20000
	testPortHigh = 32000
)

var nextTestPort atomic.Int64

func init() {
	nextTestPort.Store(int64(os.Getpid()*97) % (testPortHigh - testPortLow))
}

// unusedPort returns a loopback port below the ephemeral range that nothing
// listens on now and that this process has not handed out before.
func unusedPort() (int, error) {
	for range testPortHigh - testPortLow {
		port := testPortLow + int(nextTestPort.Add(1)%(testPortHigh-testPortLow))
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		_ = ln.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free loopback port in %d-%d", testPortLow, testPortHigh)
}
