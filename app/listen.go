package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// listenError is a listen that failed, said in a user's terms: what is
// wrong with the address and which setting changes it.
type listenError struct {
	addr, advice string
	err          error
}

func (e *listenError) Error() string { return e.addr + ": " + e.advice }
func (e *listenError) Unwrap() error { return e.err }

// explainListen turns a failure to listen on addr into advice that names
// ADAPTBOT_ADDR; other errors pass unchanged.
func explainListen(addr string, err error) error {
	host, port, splitErr := net.SplitHostPort(addr)
	if err == nil || splitErr != nil {
		return err
	}
	// The next port, or the usual one for a port that needs privileges.
	next := "3001"
	if n, _ := strconv.Atoi(port); n >= 1024 && n < 65535 {
		next = strconv.Itoa(n + 1)
	} else if n > 0 && n < 1024 {
		next = "3000"
	}
	suggest := "ADAPTBOT_ADDR=" + net.JoinHostPort(host, next)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return &listenError{addr, fmt.Sprintf("the port is already in use (by another AdaptBot in another folder, or another program); start this one on another port, e.g. %s", suggest), err}
	case errors.Is(err, syscall.EACCES):
		return &listenError{addr, fmt.Sprintf("not allowed to listen there (ports below 1024 need privileges); choose another address, e.g. %s", suggest), err}
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return &listenError{addr, fmt.Sprintf("no network interface of this machine has the address %s; choose another, e.g. ADAPTBOT_ADDR=127.0.0.1:%s", host, port), err}
	}
	return err
}
