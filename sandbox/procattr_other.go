//go:build !unix

package sandbox

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
