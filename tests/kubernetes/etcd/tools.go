//go:build tools

// Package tools pins the etcd server the admission test builds with `go build`.
package tools

import _ "go.etcd.io/etcd/server/v3"
