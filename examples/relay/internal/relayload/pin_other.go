//go:build !linux

package main

import "errors"

var errPinLinux = errors.New("-pin works on Linux only")

func splitCPUs() (relay, load string, err error) { return "", "", errPinLinux }

func pinProcess(string) error { return errPinLinux }
