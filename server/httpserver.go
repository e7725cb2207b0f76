// httpserver.go builds the http.Server and listener of `serve` and `router`: every connection
// phase is bounded (header and body reads, idle keep-alives) and the number of open connections
// is capped so idle clients cannot exhaust the process's file limit. Streaming responses are not
// bounded (no WriteTimeout).
package server

import (
	"net/http"
	"syscall"
	"time"
)

// HTTPOptions bounds the connections of an http.Server. Zero values take the defaults noted.
type HTTPOptions struct {
	ReadTimeout       time.Duration // reading one request, body included (default 30 s)
	ReadHeaderTimeout time.Duration // reading its headers (default: min(10 s, ReadTimeout))
	IdleTimeout       time.Duration // keep-alive connection waiting for its next request (default 60 s)
	MaxConnections    int           // open connections at most (default DefaultMaxConnections())
}

// DefaultMaxConnections is the connection cap when none is given: the open-file limit less a
// margin of 64 for the model files, logs and upstream connections, at least 16, at most 4096.
func DefaultMaxConnections() int {
	var rl syscall.Rlimit
	n := 512
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur > 0 && rl.Cur < 1<<20 {
		n = int(rl.Cur) - 64
	} else if err == nil {
		n = 4096
	}
	return min(max(n, 16), 4096)
}

func (o HTTPOptions) withDefaults() HTTPOptions {
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 30 * time.Second
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = min(10*time.Second, o.ReadTimeout)
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections()
	}
	return o
}

// NewHTTPServer is an http.Server for h bounded by o. ReadTimeout covers the headers and the
// body from the request's start; WriteTimeout stays 0 so long streams are never cut (a stream
// outliving ReadTimeout keeps running: TestHTTPStreamOutlivesReadTimeout).
func NewHTTPServer(h http.Handler, o HTTPOptions) *http.Server {
	o = o.withDefaults()
	return &http.Server{Handler: h, ReadTimeout: o.ReadTimeout, ReadHeaderTimeout: o.ReadHeaderTimeout,
		IdleTimeout: o.IdleTimeout, ConnState: trackConnState}
}
